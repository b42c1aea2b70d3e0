
use builtin;
use str;

set edit:completion:arg-completer[poll] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'poll'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'poll'= {
            cand -X 'HTTP method [default: GET, or POST when a body is given]'
            cand --request 'HTTP method [default: GET, or POST when a body is given]'
            cand -H 'Extra header ''Name: value''; repeatable. @FILE reads headers from FILE, one a line, and reads it again before an attempt whenever it changed'
            cand --header 'Extra header ''Name: value''; repeatable. @FILE reads headers from FILE, one a line, and reads it again before an attempt whenever it changed'
            cand -d 'Request body; @FILE reads a file, @- reads stdin'
            cand --data 'Request body; @FILE reads a file, @- reads stdin'
            cand --json 'JSON request body (validated), with Content-Type and Accept set to application/json; @FILE and @- too'
            cand -u 'Basic authentication, USER[:PASSWORD]'
            cand --user 'Basic authentication, USER[:PASSWORD]'
            cand --auth-cmd 'Run CMD (sh -c) for a bearer token: its stdout, or a Kubernetes ExecCredential (run again before it expires); a 401 runs it again and re-sends the attempt at once'
            cand -A 'User-Agent header [default: poll/<version>]'
            cand --user-agent 'User-Agent header [default: poll/<version>]'
            cand --connect-timeout 'Connect timeout of one attempt'
            cand --request-timeout 'Timeout of one whole attempt, from connect to the last body byte'
            cand --max-redirs 'Redirects followed; 0 follows none'
            cand --max-body 'Largest body read, after decompression (e.g. 512KiB, 16MiB); larger is a permanent error'
            cand --cacert 'Extra CA certificates (PEM) to trust, besides the built-in roots (for --state rediss:// too)'
            cand -E 'Client certificate (PEM) for servers that ask for one (mutual TLS); FILE:PASSPHRASE decrypts its key'
            cand --cert 'Client certificate (PEM) for servers that ask for one (mutual TLS); FILE:PASSPHRASE decrypts its key'
            cand --key 'The private key of --cert, when not in --cert''s file'
            cand --unix-socket 'Connect to this Unix domain socket instead of the URL''s host (e.g. /var/run/docker.sock); the URL still gives the path, Host and scheme; no proxy is used'
            cand --idempotency-key 'Sent as Idempotency-Key on every attempt of a POST/PATCH (with --submit: of the submit), which makes it safe to retry; auto makes a random UUID v4 once per run'
            cand --idempotency-header 'The name of the idempotency header, for APIs that use another'
            cand --prefer-wait 'Send Prefer: wait=SECONDS (RFC 7240) on every request: a server that supports it holds the request until the state changes or DURATION passes; each attempt''s timeout is DURATION plus --request-timeout'
            cand --until 'Done when this jq filter''s first output is truthy on a 2xx JSON body'
            cand --fail-when 'Stop with exit 4 when this jq filter is truthy on a 2xx JSON body (checked before --until)'
            cand --done-on 'These statuses end the run with exit 0, e.g. 404,410 to wait until it is deleted, or refused (gone); a 2xx is then "not yet" unless --until holds on it'
            cand --pending-on 'These statuses mean "not yet": polled again at --interval, spending no --retries, e.g. 404 to wait until it exists'
            cand --pending-when 'On a reply of a status no list names and that is not a 2xx: when this jq filter is truthy it is "not yet" (polled at --interval, no --retries spent), e.g. ''.error.code == "ResourceNotFound"''; otherwise retried or failed as before. A body that is not JSON reads as null'
            cand --fail-on 'These statuses end the run with exit 4, as --fail-when does, e.g. 410'
            cand --arg 'Bind $NAME to the string VALUE in every filter, as jq --arg does; repeatable'
            cand --argjson 'Bind $NAME to the JSON value in every filter, as jq --argjson does; repeatable'
            cand --stable 'Done only when the condition holds on N polls in a row (without --until: N 2xx in a row), --interval apart'
            cand --next 'The next page''s URL, by this filter on a page (e.g. .nextLink)'
            cand --max-pages 'The most pages one attempt reads; more is exit 3 [default: 100]'
            cand --status-url 'Where the operation is when the submit reply has no header for it: a jq filter on its JSON body giving a URL or path, e.g. ''"/jobs/\(.id)"'''
            cand --idle-timeout 'Under --watch, a reply that sends no byte (an event, a heartbeat, a comment) for DURATION is dropped and asked again, resuming; 0 means no bound'
            cand -i 'Wait between polls while the condition is not met yet'
            cand --interval 'Wait between polls while the condition is not met yet'
            cand --interval-max 'Let the wait between "not yet" polls grow by 1.5x each time, from --interval up to DURATION; server advice still wins [default: a fixed --interval]'
            cand --stall 'Stop (exit 1, "stalled") when what the progress line shows (the --show value, else the body) has not changed for DURATION while the condition is not met; failures neither reset nor advance it'
            cand --timeout 'Overall deadline for the whole run; 0 means none'
            cand --retries 'Consecutive transient failures tolerated; resets on every healthy 2xx'
            cand --backoff 'First retry delay; doubles on each consecutive failure'
            cand --backoff-max 'Retry delay cap'
            cand --jitter 'Randomise retry delays: equal = [d/2, d], full = [0, d], none = d'
            cand --retry-on 'Also retry these statuses, e.g. 404,409'
            cand -o 'Write the final body to FILE (atomically) instead of stdout'
            cand --output 'Write the final body to FILE (atomically) instead of stdout'
            cand --report-junit 'Also write the run as a JUnit XML report to FILE (atomically): a testcase per URL, a failure for each that did not end done, as GitLab and other CIs show test results'
            cand --print 'Print this jq filter''s outputs on the final body instead of the body: strings raw, others as JSON'
            cand --log-format 'stderr format: text, or json for one NDJSON object per attempt plus a final one'
            cand --show 'A jq filter whose output on each JSON body is shown in the progress line, e.g. .progress'
            cand --color 'Colour on stderr: auto (only on a terminal, unless NO_COLOR is set), always or never'
            cand --ci 'CI integration: github (annotations, -v groups, the step summary table), gitlab (-v in collapsed sections), or none [default: github when GITHUB_ACTIONS=true, gitlab when GITLAB_CI=true]'
            cand --start 'Start CMD (sh -c) in a group of its own, wait for the targets, run -- CMD, then stop the group'
            cand --start-grace 'SIGTERM to SIGKILL, when --start''s group is stopped'
            cand --rate 'At most N requests per DURATION, evenly spaced, e.g. 10/s, 100/m, 5/10s; shared through --state; auto (with --state): learned from the server''s 429s by the whole fleet'
            cand --retry-budget 'With --state: the fleet''s retries over the last 10s are at most PCT of its other requests plus N a second (20% means 20%/1); a retry with no room waits for the next regular poll'
            cand --state 'State shared by every poll naming it: rate budget, server advice, circuit breaker, last good body; a FILE, or redis://[USER:PASS@]HOST[:PORT][/DB] (any node of a cluster too), rediss://..., redis+unix:///PATH, redis+sentinel://HOST[:PORT][,HOST[:PORT]...]/MASTER[/DB]'
            cand --state-key 'The key of the shared state instead of the origin, e.g. one per API token [default: the origin]'
            cand --state-fail 'When the state store cannot be reached within 1s: open warns and goes on with this process''s own limits, closed exits 6'
            cand --breaker-window 'Outcomes the circuit breaker remembers per origin (5 to 1000)'
            cand --breaker-min-success 'Open the breaker when the success rate over the window (at least 5 outcomes) falls below this'
            cand --breaker-max-p95 'Open the breaker when the window''s p95 latency exceeds this'
            cand --breaker-cooldown 'How long an open breaker stays open before one probe; doubles on each failed probe, up to 10m'
            cand --fallback 'Body printed when the run ends with exit 1, 5 or 6: JSON, @FILE, or last (the last good body in --state)'
            cand -k 'Accept any TLS certificate'
            cand --insecure 'Accept any TLS certificate'
            cand -I 'Send HEAD (curl''s -I): a cheap existence check; the body is empty'
            cand --head 'Send HEAD (curl''s -I): a cheap existence check; the body is empty'
            cand --no-conditional 'Send no If-None-Match / If-Modified-Since from the last 2xx''s ETag / Last-Modified [default: conditional polls, a 304 judged on the body kept]'
            cand --any 'Done as soon as one URL is done; the others are abandoned [default: all must be done]'
            cand --paginate 'Read every page a Link: rel="next" names; the filters get an array'
            cand --submit 'The request starts an operation: send it once (a PUT or DELETE is re-sent on transient failures), then poll the status URL its reply names with GET, or a PUT''s or PATCH''s own URL when it names none (ARM''s body polling); a reply that is already done or failed ends the run'
            cand --location-trusted 'Also send Authorization, Cookie and -u to another origin'
            cand --watch 'Keep each reply open and judge what it streams, event by event (SSE, JSON streams, long polls, blocking queries); when a reply ends, ask again, resuming'
            cand --retry-non-idempotent 'Retry POST and PATCH like GET, even when the request may have been processed'
            cand -v 'One line per attempt on stderr; -vv adds response headers'
            cand --verbose 'One line per attempt on stderr; -vv adds response headers'
            cand -q 'Print only the final error line'
            cand --quiet 'Print only the final error line'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
    ]
    $completions[$command]
}
