"""Client quotas (KIP-55, KIP-257): rates (rate.py), the managers that decide throttle times
(manager.py) and the connection side of throttling (throttle.py). The entity model and
ZooKeeper layout are protocol/quota.py; storage and change following coordinator/cluster/quotas.py.
"""
