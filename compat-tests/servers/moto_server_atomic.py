"""moto_server with one request at a time inside the app, so conditional writes are atomic.

moto's server is threaded (werkzeug, threaded=True) and its DynamoDB backend checks a
ConditionExpression and then writes without a lock, so two concurrent conditional PutItems on
one item can both succeed. Real DynamoDB evaluates a condition and applies the write atomically
per item, and ddblock's "never two holders" guarantee rests on that. Holding one lock around
each request's dispatch restores that property; connections are still served by threads, so
keep-alive clients don't block each other while idle.

Usage: python moto_server_atomic.py -H 127.0.0.1 -p PORT   (the same arguments as moto_server)
"""

import threading

from moto import server
from moto.moto_server import werkzeug_app

_dispatch = werkzeug_app.DomainDispatcherApplication.__call__
_one_at_a_time = threading.Lock()


def _atomic_call(self, environ, start_response):  # type: ignore[no-untyped-def]
    with _one_at_a_time:
        # Flask builds the whole response body inside the call, so the write is done on return.
        return _dispatch(self, environ, start_response)


werkzeug_app.DomainDispatcherApplication.__call__ = _atomic_call  # type: ignore[method-assign]

if __name__ == "__main__":
    server.main()
