"""The demo's pure parts: its objects and its table."""

from preemption_toleration.demo.objects import pod, policies, render_table


def test_demo_table_is_aligned() -> None:
    assert render_table(["A", "LONGER"], [["xyz", "1"], ["q", "22"]]).splitlines() == [
        "A    LONGER",
        "xyz  1",
        "q    22",
    ]


def test_demo_policies_are_the_two_use_cases() -> None:
    specs = {p["metadata"]["name"]: p["spec"] for p in policies(guarantee_seconds=20)}
    assert specs == {
        "low-non-preempted": {"priorityClassName": "low-non-preempted", "minimumPreemptablePriority": 10000,
                              "tolerationSeconds": -1},
        "low-guaranteed": {"priorityClassName": "low-guaranteed", "minimumPreemptablePriority": 10000,
                           "tolerationSeconds": 20},
    }
    assert pod("p", "high")["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "2"}}
