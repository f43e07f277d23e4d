"""The admission webhooks: validating and mutating PriorityClasses and policies (architecture §4).

`decisions` is pure (request + cache snapshot -> response); `caches` feeds it from watches; `server` is
the aiohttp adapter; `tls` provides its certificates.
"""
