"""pydantic models of the objects we accept and produce (AdmissionReview, the policy resource, the pod fields
the guard and the extender read, the extender's payloads), the CRD built from them, and the URL paths the
webhook server serves (`paths`)."""
