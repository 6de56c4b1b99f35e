"""`odradek chaos`: faults injected into a local cluster while a workload runs, and a checker
that proves from the data what was kept.

    plan.py      the fault kinds and a seeded schedule of them (pure)
    faults.py    injecting and healing each kind on a LocalCluster (signals, files, links)
    workload.py  idempotent acks=all producers and a committing consumer group, recorded
    checker.py   the run's record -> findings (pure; also re-run on a saved JSON record)
    runner.py    `chaos run` and `chaos faults`: the schedule, the read-back, the report
    cli.py       the command line
    txn_*.py     `--workload txn`: transactions, and Jepsen's anomaly checks
    share_*.py   `--workload share`: a share group's member processes (share_member.py),
                 the run (share_run.py, share_workload.py) and its checks (share_checker.py)
"""
