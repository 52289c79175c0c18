// Package metrics owns petstore's Prometheus registry and every collector on
// it, and the handler that `serve --metrics-addr` serves at /metrics (never
// on the public listener).
//
// Packages below hooks never import this one: they take narrow values (a
// prometheus.Observer, a prometheus.Counter, a function that reports a
// figure) that hooks makes here and hands down.
//
// The names, one source of truth for code, docs and the Grafana dashboard.
// The labelled counters whose label values are known (the rate limiter's
// outcomes for the anonymous plan, Idempotency-Key and webhook outcomes,
// audit actions) start at 0 (Known).
//
// No label carries a key, a key's id or prefix, a customer, a pet id, a path with an id,
// or any client-controlled value without a bound.
//
//	http_server_request_duration_seconds        histogram  http_request_method, http_route, http_response_status_code
//	                                                       (OpenTelemetry's HTTP server names as Prometheus exports them;
//	                                                       http_route is the pattern: /v1/pets, /v1/pets/{petId}, /v1/categories, /v1/usage,
//	                                                       /v1/openapi.json, /v1/openapi.yaml, or "other" under /v1; outside it,
//	                                                       the registered pattern that answered, PocketBase's included)
//	petstore_ratelimit_requests_total           counter    plan ("anonymous" without a valid key), outcome (admitted, limited, banned)
//	petstore_ratelimit_bans_total               counter    bans started
//	petstore_api_requests_by_plan_total         counter    plan (the first 20 plan names seen, later ones "other"), outcome (served,
//	                                                       refused, limited, failed): /v1 requests of API keys answered, as usage counts them
//	petstore_usage_threshold_events_total       counter    plan (as above), threshold (80, 100): day quota crossings told of
//	petstore_ratelimit_redis_up                 gauge      1 while Redis decides, 0 while the limiter counts locally
//	petstore_ratelimit_redis_lost_total         counter    times counting moved from Redis to local
//	petstore_pets_writer_batch_size             histogram  creates written per commit
//	petstore_pets_writer_commit_duration_seconds histogram one transaction of the pets writer, begin to commit
//	petstore_idempotency_requests_total         counter    outcome (stored, replayed, conflict)
//	petstore_idempotency_keys                   gauge      Idempotency-Keys remembered
//	petstore_sqlite_file_bytes                  gauge      file (data.db, data.db-wal, auxiliary.db, auxiliary.db-wal)
//	petstore_pets                               gauge      pets stored
//	petstore_categories                         gauge      categories named
//	petstore_categories_unnamed                 gauge      numbers pets carry that no category names
//	petstore_customers                          gauge      customers, who own keys
//	petstore_api_keys                           gauge      state (active, expired, revoked, banned)
//	petstore_realtime_subscribers               gauge      PocketBase realtime clients connected
//	petstore_requestlog_rows_total              counter    rows written to the request log
//	petstore_requestlog_dropped_total           counter    reason: requests without a row of their own (full: the queue or the
//	                                                       minute's refusals were full; coalesced: a refusal counted in its
//	                                                       network's row; bounded: a success counted in its second's row)
//	petstore_audit_events_total                 counter    action: audit records committed by this instance
//	petstore_data_version_reads_total           counter    reads of the data version /v1's caches follow (about one per commit)
//	petstore_http_connections_open              gauge      connections open on the public listener
//	petstore_http_connections_refused_total     counter    reason (per_address, global): connections closed as accepted
//	petstore_webhook_deliveries_total           counter    outcome (delivered, retried, failed)
//	petstore_webhook_delivery_duration_seconds  histogram  one delivery attempt
//	petstore_webhook_outbox_pending             gauge      events not yet delivered
//	petstore_webhook_secrets_plaintext          gauge      endpoints whose secret is stored in plaintext
//	petstore_backup_last_success_timestamp_seconds gauge  Unix time of the newest of PocketBase's backups, 0 without one
//	petstore_cluster_role                       gauge      role (candidate, follower, leader): 1 for this node's, cluster mode only
//	petstore_cluster_term                       gauge      the term this node leads (0: it does not)
//	petstore_cluster_leader_term                gauge      the term of the leader this node knows (0: none)
//	petstore_cluster_elections_total            counter    leader changes this node has seen
//	petstore_cluster_forged_records_total       counter    leader records in etcd refused as not authenticated (--cluster-secret-file), each once
//	petstore_cluster_forwards_refused_total     counter    the leader: requests naming a forwarding node refused as not authenticated
//	petstore_cluster_lag_seconds                gauge      a follower's copy: age of the oldest transaction not applied
//	petstore_cluster_lag_transactions           gauge      a follower's copy: transactions not applied
//	petstore_cluster_replica_up                 gauge      the leader: 1 while its data ships to the replica
//	petstore_cluster_leader_unshipped_seconds   gauge      age of the leader's oldest commit not in the replica (a follower: as the leader last said)
//	petstore_cluster_syncs_total                counter    the leader under --cluster-sync: shipments made for creates (each serves those waiting)
//	petstore_build_info                         gauge      version, revision, goversion; always 1
//	go_*, process_*                                        the Go and process collectors
package metrics
