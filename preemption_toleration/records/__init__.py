"""One typed record per kind of object the decisions read, built once from a body or a cached object and
never turned back into JSON: pods (`pod`: slim records of the caches, and views over a request's pod),
nodes (`node`), PriorityClasses with their toleration parsed once (`priority_class`) and policies
(`policy`). Pure. The contract's checks in `core` read pods through `core.pods.PodFacts`, which these
records satisfy."""
