"""Running odradek: the `odradek` command (cli.py), the local mini-cluster (cluster.py), the
ZooKeeper launcher (zookeeper.py), the load generators (perf.py) and example configs for brokers
on separate hosts (configs/)."""
