"""What must be written for the policies, pure: the conflict rule (shared by the operator, the policy webhook
and `ptol validate`, in `conflicts`; who governs a class is `inventory.ownership`), the `planner` and each
policy's `status`."""
