complete -c poll -s X -l request -d 'HTTP method [default: GET, or POST when a body is given]' -r
complete -c poll -s H -l header -d 'Extra header \'Name: value\'; repeatable. @FILE reads headers from FILE, one a line, and reads it again before an attempt whenever it changed' -r
complete -c poll -s d -l data -d 'Request body; @FILE reads a file, @- reads stdin' -r
complete -c poll -l json -d 'JSON request body (validated), with Content-Type and Accept set to application/json; @FILE and @- too' -r
complete -c poll -s u -l user -d 'Basic authentication, USER[:PASSWORD]' -r
complete -c poll -l auth-cmd -d 'Run CMD (sh -c) for a bearer token: its stdout, or a Kubernetes ExecCredential (run again before it expires); a 401 runs it again and re-sends the attempt at once' -r
complete -c poll -s A -l user-agent -d 'User-Agent header [default: poll/<version>]' -r
complete -c poll -l connect-timeout -d 'Connect timeout of one attempt' -r
complete -c poll -l request-timeout -d 'Timeout of one whole attempt, from connect to the last body byte' -r
complete -c poll -l max-redirs -d 'Redirects followed; 0 follows none' -r
complete -c poll -l max-body -d 'Largest body read, after decompression (e.g. 512KiB, 16MiB); larger is a permanent error' -r
complete -c poll -l cacert -d 'Extra CA certificates (PEM) to trust, besides the built-in roots (for --state rediss:// too)' -r -F
complete -c poll -s E -l cert -d 'Client certificate (PEM) for servers that ask for one (mutual TLS); FILE:PASSPHRASE decrypts its key' -r -F
complete -c poll -l key -d 'The private key of --cert, when not in --cert\'s file' -r -F
complete -c poll -l unix-socket -d 'Connect to this Unix domain socket instead of the URL\'s host (e.g. /var/run/docker.sock); the URL still gives the path, Host and scheme; no proxy is used' -r -F
complete -c poll -l idempotency-key -d 'Sent as Idempotency-Key on every attempt of a POST/PATCH (with --submit: of the submit), which makes it safe to retry; auto makes a random UUID v4 once per run' -r
complete -c poll -l idempotency-header -d 'The name of the idempotency header, for APIs that use another' -r
complete -c poll -l prefer-wait -d 'Send Prefer: wait=SECONDS (RFC 7240) on every request: a server that supports it holds the request until the state changes or DURATION passes; each attempt\'s timeout is DURATION plus --request-timeout' -r
complete -c poll -l until -d 'Done when this jq filter\'s first output is truthy on a 2xx JSON body' -r
complete -c poll -l fail-when -d 'Stop with exit 4 when this jq filter is truthy on a 2xx JSON body (checked before --until)' -r
complete -c poll -l done-on -d 'These statuses end the run with exit 0, e.g. 404,410 to wait until it is deleted, or refused (gone); a 2xx is then "not yet" unless --until holds on it' -r
complete -c poll -l pending-on -d 'These statuses mean "not yet": polled again at --interval, spending no --retries, e.g. 404 to wait until it exists' -r
complete -c poll -l pending-when -d 'On a reply of a status no list names and that is not a 2xx: when this jq filter is truthy it is "not yet" (polled at --interval, no --retries spent), e.g. \'.error.code == "ResourceNotFound"\'; otherwise retried or failed as before. A body that is not JSON reads as null' -r
complete -c poll -l fail-on -d 'These statuses end the run with exit 4, as --fail-when does, e.g. 410' -r
complete -c poll -l arg -d 'Bind $NAME to the string VALUE in every filter, as jq --arg does; repeatable' -r
complete -c poll -l argjson -d 'Bind $NAME to the JSON value in every filter, as jq --argjson does; repeatable' -r
complete -c poll -l stable -d 'Done only when the condition holds on N polls in a row (without --until: N 2xx in a row), --interval apart' -r
complete -c poll -l next -d 'The next page\'s URL, by this filter on a page (e.g. .nextLink)' -r
complete -c poll -l max-pages -d 'The most pages one attempt reads; more is exit 3 [default: 100]' -r
complete -c poll -l status-url -d 'Where the operation is when the submit reply has no header for it: a jq filter on its JSON body giving a URL or path, e.g. \'"/jobs/\\(.id)"\'' -r
complete -c poll -l idle-timeout -d 'Under --watch, a reply that sends no byte (an event, a heartbeat, a comment) for DURATION is dropped and asked again, resuming; 0 means no bound' -r
complete -c poll -s i -l interval -d 'Wait between polls while the condition is not met yet' -r
complete -c poll -l interval-max -d 'Let the wait between "not yet" polls grow by 1.5x each time, from --interval up to DURATION; server advice still wins [default: a fixed --interval]' -r
complete -c poll -l stall -d 'Stop (exit 1, "stalled") when what the progress line shows (the --show value, else the body) has not changed for DURATION while the condition is not met; failures neither reset nor advance it' -r
complete -c poll -l timeout -d 'Overall deadline for the whole run; 0 means none' -r
complete -c poll -l retries -d 'Consecutive transient failures tolerated; resets on every healthy 2xx' -r
complete -c poll -l backoff -d 'First retry delay; doubles on each consecutive failure' -r
complete -c poll -l backoff-max -d 'Retry delay cap' -r
complete -c poll -l jitter -d 'Randomise retry delays: equal = [d/2, d], full = [0, d], none = d' -r -f -a "equal\t''
full\t''
none\t''"
complete -c poll -l retry-on -d 'Also retry these statuses, e.g. 404,409' -r
complete -c poll -s o -l output -d 'Write the final body to FILE (atomically) instead of stdout' -r -F
complete -c poll -l report-junit -d 'Also write the run as a JUnit XML report to FILE (atomically): a testcase per URL, a failure for each that did not end done, as GitLab and other CIs show test results' -r -F
complete -c poll -l print -d 'Print this jq filter\'s outputs on the final body instead of the body: strings raw, others as JSON' -r
complete -c poll -l log-format -d 'stderr format: text, or json for one NDJSON object per attempt plus a final one' -r -f -a "text\t''
json\t''"
complete -c poll -l show -d 'A jq filter whose output on each JSON body is shown in the progress line, e.g. .progress' -r
complete -c poll -l color -d 'Colour on stderr: auto (only on a terminal, unless NO_COLOR is set), always or never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c poll -l ci -d 'CI integration: github (annotations, -v groups, the step summary table), gitlab (-v in collapsed sections), or none [default: github when GITHUB_ACTIONS=true, gitlab when GITLAB_CI=true]' -r -f -a "github\t''
gitlab\t''
none\t''"
complete -c poll -l start -d 'Start CMD (sh -c) in a group of its own, wait for the targets, run -- CMD, then stop the group' -r
complete -c poll -l start-grace -d 'SIGTERM to SIGKILL, when --start\'s group is stopped' -r
complete -c poll -l rate -d 'At most N requests per DURATION, evenly spaced, e.g. 10/s, 100/m, 5/10s; shared through --state; auto (with --state): learned from the server\'s 429s by the whole fleet' -r
complete -c poll -l retry-budget -d 'With --state: the fleet\'s retries over the last 10s are at most PCT of its other requests plus N a second (20% means 20%/1); a retry with no room waits for the next regular poll' -r
complete -c poll -l state -d 'State shared by every poll naming it: rate budget, server advice, circuit breaker, last good body; a FILE, or redis://[USER:PASS@]HOST[:PORT][/DB] (any node of a cluster too), rediss://..., redis+unix:///PATH, redis+sentinel://HOST[:PORT][,HOST[:PORT]...]/MASTER[/DB]' -r
complete -c poll -l state-key -d 'The key of the shared state instead of the origin, e.g. one per API token [default: the origin]' -r
complete -c poll -l state-fail -d 'When the state store cannot be reached within 1s: open warns and goes on with this process\'s own limits, closed exits 6' -r -f -a "open\t''
closed\t''"
complete -c poll -l breaker-window -d 'Outcomes the circuit breaker remembers per origin (5 to 1000)' -r
complete -c poll -l breaker-min-success -d 'Open the breaker when the success rate over the window (at least 5 outcomes) falls below this' -r
complete -c poll -l breaker-max-p95 -d 'Open the breaker when the window\'s p95 latency exceeds this' -r
complete -c poll -l breaker-cooldown -d 'How long an open breaker stays open before one probe; doubles on each failed probe, up to 10m' -r
complete -c poll -l fallback -d 'Body printed when the run ends with exit 1, 5 or 6: JSON, @FILE, or last (the last good body in --state)' -r
complete -c poll -s k -l insecure -d 'Accept any TLS certificate'
complete -c poll -s I -l head -d 'Send HEAD (curl\'s -I): a cheap existence check; the body is empty'
complete -c poll -l no-conditional -d 'Send no If-None-Match / If-Modified-Since from the last 2xx\'s ETag / Last-Modified [default: conditional polls, a 304 judged on the body kept]'
complete -c poll -l any -d 'Done as soon as one URL is done; the others are abandoned [default: all must be done]'
complete -c poll -l paginate -d 'Read every page a Link: rel="next" names; the filters get an array'
complete -c poll -l submit -d 'The request starts an operation: send it once (a PUT or DELETE is re-sent on transient failures), then poll the status URL its reply names with GET, or a PUT\'s or PATCH\'s own URL when it names none (ARM\'s body polling); a reply that is already done or failed ends the run'
complete -c poll -l location-trusted -d 'Also send Authorization, Cookie and -u to another origin'
complete -c poll -l watch -d 'Keep each reply open and judge what it streams, event by event (SSE, JSON streams, long polls, blocking queries); when a reply ends, ask again, resuming'
complete -c poll -l retry-non-idempotent -d 'Retry POST and PATCH like GET, even when the request may have been processed'
complete -c poll -s v -l verbose -d 'One line per attempt on stderr; -vv adds response headers'
complete -c poll -s q -l quiet -d 'Print only the final error line'
complete -c poll -s h -l help -d 'Print help (see more with \'--help\')'
complete -c poll -s V -l version -d 'Print version'
