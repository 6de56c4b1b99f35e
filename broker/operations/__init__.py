"""One operation per API, whichever door the request came in by (issue 32).

An operation is a module with a door-neutral request model, a result model and

    run(ctx: BrokerContext, session: Session, request: XRequest) -> XResult | Awaitable[XResult]

It decides everything the API means, once: it authorizes (the checks of its row of
broker/security/rules.py's `RULES`, whom `session` names), answers every refusal (no
coordinator here, an invalid request, ...), calls the service on `ctx` and returns the typed
result, with Kafka's per-resource errors inside it. It knows no wire: it never sees a kio entity
or a msgpack envelope, and it imports neither the doors (broker/doors.py) nor the codecs
(broker/codecs/) nor the table (broker/apis.py); they import it.

A door's codec (broker/codecs/) maps its wire messages to the request model and the result
model back to its wire messages: that is all a door does per API. broker/apis.py's table joins
each operation to its ACL rule and to the versions and codec of each door that serves it.

A plain result when nothing must be waited for (Heartbeat) lets the server answer without a
task; an operation that waits (a coordinator write) is a coroutine function.
"""
