"""Share partitions on the partition leader (KIP-932): the in-flight records' state machine
(record_states.py), one share partition's records between its start and end offsets
(share_partition.py), and the share sessions and ShareFetch / ShareAcknowledge service over
the replica manager (manager.py, sessions.py)."""
