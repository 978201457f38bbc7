"""csd's Prometheus metrics, opt-in (`metrics_endpoint`): the metric set and the HTTP listener
that serves it on a thread of its own, so a scrape costs the serving loop nothing.

    metric_set.py   the metric set (prometheus_client) and the View the loop publishes
    no_metrics.py   NO_METRICS: the same calls, doing nothing (metrics off; no prometheus_client)
    listener.py     the listener: render cache, pacing, deadlines, caps per address
    http_server.py  the listener's loop: one thread, non-blocking sockets under a selector
    http_socket.py  its listening socket, and the limits on the connections it accepts
    http_codec.py   the little HTTP/1.x it speaks: a request head read within bounds, an answer
    endpoint.py     the `metrics_endpoint` setting, parsed (stdlib only: --check-config)

It imports the model's vocabularies (events, faults, fabric) and the shared leaves, nothing else
of csd; daemon/process/metrics_start.py starts it (tests/test_layers.py).
"""
