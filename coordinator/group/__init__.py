"""Consumer group coordination: states (the table), assignors, records, group logic, service."""
