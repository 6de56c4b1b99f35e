"""`odradek console`: a live web console of a cluster (issue 13).

    model.py    pure functions: partition status and its explained cause, record rendering
                (text, JSON, hex), search matching, start positions, lag history, staleness
    gather.py   one snapshot of the cluster through the client library and the admin APIs
                (Metadata, ListOffsets, DescribeLogDirs on the Kafka listener, the groups'
                coordinator), each section kept with its age when a refresh of it fails
    browse.py   the message browser: one page of records per request (AsyncConsumer, assign and
                seek), a bounded forward search
    schemas.py  the schema registry's subjects and versions, and the browser's decoding of
                values framed with a registry id (Avro, JSON Schema)
    timeline.py the chaos events file (`odradek chaos` appends, the console reads its tail)
    server.py   the aiohttp app: the page, the snapshot pushed by Server-Sent Events, the browser
                and the local cluster's kill / pause / start buttons
    views.py    whom the console reads as: one shared View (an unsecured cluster), or one per
                login session, over that user's own SASL session, so the broker's ACLs decide
                what each user sees (refusals.py: the broker's refusals, shown as such)
    auth.py     a secured cluster's logins (the cluster's own SASL users) and sessions
    launch.py   `cluster up` starts a console in the background; `cluster down` stops it
    static/     one HTML page, its JavaScript and CSS; no build step

Nothing here reads segment files: all of it goes over the brokers' APIs (and the brokers'
schema registry's REST API).
"""
