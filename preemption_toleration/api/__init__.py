"""pydantic models of the objects we accept and produce (AdmissionReview, the policy resource, the pod fields
the guard and the extender read, the extender's payloads), from which `manifests.crd` builds the CRD, and the
URL paths the webhook server serves (`paths`)."""
