"""Which policy governs which PriorityClass and what must be written, pure: ownership and the conflict rule
(shared by the operator, the policy webhook and `ptol validate`), the plan, each policy's status, and the
slim views of policies and classes they read."""
