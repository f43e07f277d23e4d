"""What must be written for the policies, pure: the conflict rule (shared by the operator, the policy webhook
and `ptol validate`; who governs a class is `inventory.ownership`), the plan and each policy's status."""
