"""Which policy governs which PriorityClass, and what must be written: pure planning for the operator.

The operator's kopf handlers feed it what the watches saw and send what it decides; nothing here does
I/O, so every decision (ownership, conflicts, what to write, the status) is unit-tested directly.
"""
