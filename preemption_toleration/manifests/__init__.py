"""Every manifest the project ships, built from the code (architecture §8; pure: builders return dicts and
text, and writing files is the CLI's). The PreemptionTolerationPolicy CRD from the pydantic models (`crd`),
kopf's peering CRD (`kopf_peering`), the webhook configurations the server registers
(`webhook_configurations`), the scheduler's extender entry (`scheduler_extender`), the
ValidatingAdmissionPolicy from the admission rules' own messages (`admission_policy`), the chart's generated
templates (`chart`), and config/'s files rendered from the chart (`rendered`, `deletions`). `files` lists
every generated file by its path, as `ptol dev manifests` writes and checks them (kubebuilder's
`make manifests`).
"""
