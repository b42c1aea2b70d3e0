
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'poll' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'poll'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'poll' {
            [CompletionResult]::new('-X', '-X ', [CompletionResultType]::ParameterName, 'HTTP method [default: GET, or POST when a body is given]')
            [CompletionResult]::new('--request', '--request', [CompletionResultType]::ParameterName, 'HTTP method [default: GET, or POST when a body is given]')
            [CompletionResult]::new('-H', '-H ', [CompletionResultType]::ParameterName, 'Extra header ''Name: value''; repeatable. @FILE reads headers from FILE, one a line, and reads it again before an attempt whenever it changed')
            [CompletionResult]::new('--header', '--header', [CompletionResultType]::ParameterName, 'Extra header ''Name: value''; repeatable. @FILE reads headers from FILE, one a line, and reads it again before an attempt whenever it changed')
            [CompletionResult]::new('-d', '-d', [CompletionResultType]::ParameterName, 'Request body; @FILE reads a file, @- reads stdin')
            [CompletionResult]::new('--data', '--data', [CompletionResultType]::ParameterName, 'Request body; @FILE reads a file, @- reads stdin')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'JSON request body (validated), with Content-Type and Accept set to application/json; @FILE and @- too')
            [CompletionResult]::new('-u', '-u', [CompletionResultType]::ParameterName, 'Basic authentication, USER[:PASSWORD]')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'Basic authentication, USER[:PASSWORD]')
            [CompletionResult]::new('--auth-cmd', '--auth-cmd', [CompletionResultType]::ParameterName, 'Run CMD (sh -c) for a bearer token: its stdout, or a Kubernetes ExecCredential (run again before it expires); a 401 runs it again and re-sends the attempt at once')
            [CompletionResult]::new('-A', '-A ', [CompletionResultType]::ParameterName, 'User-Agent header [default: poll/<version>]')
            [CompletionResult]::new('--user-agent', '--user-agent', [CompletionResultType]::ParameterName, 'User-Agent header [default: poll/<version>]')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'Connect timeout of one attempt')
            [CompletionResult]::new('--request-timeout', '--request-timeout', [CompletionResultType]::ParameterName, 'Timeout of one whole attempt, from connect to the last body byte')
            [CompletionResult]::new('--max-redirs', '--max-redirs', [CompletionResultType]::ParameterName, 'Redirects followed; 0 follows none')
            [CompletionResult]::new('--max-body', '--max-body', [CompletionResultType]::ParameterName, 'Largest body read, after decompression (e.g. 512KiB, 16MiB); larger is a permanent error')
            [CompletionResult]::new('--cacert', '--cacert', [CompletionResultType]::ParameterName, 'Extra CA certificates (PEM) to trust, besides the built-in roots (for --state rediss:// too)')
            [CompletionResult]::new('-E', '-E ', [CompletionResultType]::ParameterName, 'Client certificate (PEM) for servers that ask for one (mutual TLS); FILE:PASSPHRASE decrypts its key')
            [CompletionResult]::new('--cert', '--cert', [CompletionResultType]::ParameterName, 'Client certificate (PEM) for servers that ask for one (mutual TLS); FILE:PASSPHRASE decrypts its key')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'The private key of --cert, when not in --cert''s file')
            [CompletionResult]::new('--unix-socket', '--unix-socket', [CompletionResultType]::ParameterName, 'Connect to this Unix domain socket instead of the URL''s host (e.g. /var/run/docker.sock); the URL still gives the path, Host and scheme; no proxy is used')
            [CompletionResult]::new('--idempotency-key', '--idempotency-key', [CompletionResultType]::ParameterName, 'Sent as Idempotency-Key on every attempt of a POST/PATCH (with --submit: of the submit), which makes it safe to retry; auto makes a random UUID v4 once per run')
            [CompletionResult]::new('--idempotency-header', '--idempotency-header', [CompletionResultType]::ParameterName, 'The name of the idempotency header, for APIs that use another')
            [CompletionResult]::new('--prefer-wait', '--prefer-wait', [CompletionResultType]::ParameterName, 'Send Prefer: wait=SECONDS (RFC 7240) on every request: a server that supports it holds the request until the state changes or DURATION passes; each attempt''s timeout is DURATION plus --request-timeout')
            [CompletionResult]::new('--until', '--until', [CompletionResultType]::ParameterName, 'Done when this jq filter''s first output is truthy on a 2xx JSON body')
            [CompletionResult]::new('--fail-when', '--fail-when', [CompletionResultType]::ParameterName, 'Stop with exit 4 when this jq filter is truthy on a 2xx JSON body (checked before --until)')
            [CompletionResult]::new('--done-on', '--done-on', [CompletionResultType]::ParameterName, 'These statuses end the run with exit 0, e.g. 404,410 to wait until it is deleted, or refused (gone); a 2xx is then "not yet" unless --until holds on it')
            [CompletionResult]::new('--pending-on', '--pending-on', [CompletionResultType]::ParameterName, 'These statuses mean "not yet": polled again at --interval, spending no --retries, e.g. 404 to wait until it exists')
            [CompletionResult]::new('--pending-when', '--pending-when', [CompletionResultType]::ParameterName, 'On a reply of a status no list names and that is not a 2xx: when this jq filter is truthy it is "not yet" (polled at --interval, no --retries spent), e.g. ''.error.code == "ResourceNotFound"''; otherwise retried or failed as before. A body that is not JSON reads as null')
            [CompletionResult]::new('--fail-on', '--fail-on', [CompletionResultType]::ParameterName, 'These statuses end the run with exit 4, as --fail-when does, e.g. 410')
            [CompletionResult]::new('--arg', '--arg', [CompletionResultType]::ParameterName, 'Bind $NAME to the string VALUE in every filter, as jq --arg does; repeatable')
            [CompletionResult]::new('--argjson', '--argjson', [CompletionResultType]::ParameterName, 'Bind $NAME to the JSON value in every filter, as jq --argjson does; repeatable')
            [CompletionResult]::new('--stable', '--stable', [CompletionResultType]::ParameterName, 'Done only when the condition holds on N polls in a row (without --until: N 2xx in a row), --interval apart')
            [CompletionResult]::new('--next', '--next', [CompletionResultType]::ParameterName, 'The next page''s URL, by this filter on a page (e.g. .nextLink)')
            [CompletionResult]::new('--max-pages', '--max-pages', [CompletionResultType]::ParameterName, 'The most pages one attempt reads; more is exit 3 [default: 100]')
            [CompletionResult]::new('--status-url', '--status-url', [CompletionResultType]::ParameterName, 'Where the operation is when the submit reply has no header for it: a jq filter on its JSON body giving a URL or path, e.g. ''"/jobs/\(.id)"''')
            [CompletionResult]::new('--idle-timeout', '--idle-timeout', [CompletionResultType]::ParameterName, 'Under --watch, a reply that sends no byte (an event, a heartbeat, a comment) for DURATION is dropped and asked again, resuming; 0 means no bound')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'Wait between polls while the condition is not met yet')
            [CompletionResult]::new('--interval', '--interval', [CompletionResultType]::ParameterName, 'Wait between polls while the condition is not met yet')
            [CompletionResult]::new('--interval-max', '--interval-max', [CompletionResultType]::ParameterName, 'Let the wait between "not yet" polls grow by 1.5x each time, from --interval up to DURATION; server advice still wins [default: a fixed --interval]')
            [CompletionResult]::new('--stall', '--stall', [CompletionResultType]::ParameterName, 'Stop (exit 1, "stalled") when what the progress line shows (the --show value, else the body) has not changed for DURATION while the condition is not met; failures neither reset nor advance it')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Overall deadline for the whole run; 0 means none')
            [CompletionResult]::new('--retries', '--retries', [CompletionResultType]::ParameterName, 'Consecutive transient failures tolerated; resets on every healthy 2xx')
            [CompletionResult]::new('--backoff', '--backoff', [CompletionResultType]::ParameterName, 'First retry delay; doubles on each consecutive failure')
            [CompletionResult]::new('--backoff-max', '--backoff-max', [CompletionResultType]::ParameterName, 'Retry delay cap')
            [CompletionResult]::new('--jitter', '--jitter', [CompletionResultType]::ParameterName, 'Randomise retry delays: equal = [d/2, d], full = [0, d], none = d')
            [CompletionResult]::new('--retry-on', '--retry-on', [CompletionResultType]::ParameterName, 'Also retry these statuses, e.g. 404,409')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Write the final body to FILE (atomically) instead of stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Write the final body to FILE (atomically) instead of stdout')
            [CompletionResult]::new('--report-junit', '--report-junit', [CompletionResultType]::ParameterName, 'Also write the run as a JUnit XML report to FILE (atomically): a testcase per URL, a failure for each that did not end done, as GitLab and other CIs show test results')
            [CompletionResult]::new('--print', '--print', [CompletionResultType]::ParameterName, 'Print this jq filter''s outputs on the final body instead of the body: strings raw, others as JSON')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'stderr format: text, or json for one NDJSON object per attempt plus a final one')
            [CompletionResult]::new('--show', '--show', [CompletionResultType]::ParameterName, 'A jq filter whose output on each JSON body is shown in the progress line, e.g. .progress')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour on stderr: auto (only on a terminal, unless NO_COLOR is set), always or never')
            [CompletionResult]::new('--ci', '--ci', [CompletionResultType]::ParameterName, 'CI integration: github (annotations, -v groups, the step summary table), gitlab (-v in collapsed sections), or none [default: github when GITHUB_ACTIONS=true, gitlab when GITLAB_CI=true]')
            [CompletionResult]::new('--start', '--start', [CompletionResultType]::ParameterName, 'Start CMD (sh -c) in a group of its own, wait for the targets, run -- CMD, then stop the group')
            [CompletionResult]::new('--start-grace', '--start-grace', [CompletionResultType]::ParameterName, 'SIGTERM to SIGKILL, when --start''s group is stopped')
            [CompletionResult]::new('--rate', '--rate', [CompletionResultType]::ParameterName, 'At most N requests per DURATION, evenly spaced, e.g. 10/s, 100/m, 5/10s; shared through --state; auto (with --state): learned from the server''s 429s by the whole fleet')
            [CompletionResult]::new('--retry-budget', '--retry-budget', [CompletionResultType]::ParameterName, 'With --state: the fleet''s retries over the last 10s are at most PCT of its other requests plus N a second (20% means 20%/1); a retry with no room waits for the next regular poll')
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'State shared by every poll naming it: rate budget, server advice, circuit breaker, last good body; a FILE, or redis://[USER:PASS@]HOST[:PORT][/DB] (any node of a cluster too), rediss://..., redis+unix:///PATH, redis+sentinel://HOST[:PORT][,HOST[:PORT]...]/MASTER[/DB]')
            [CompletionResult]::new('--state-key', '--state-key', [CompletionResultType]::ParameterName, 'The key of the shared state instead of the origin, e.g. one per API token [default: the origin]')
            [CompletionResult]::new('--state-fail', '--state-fail', [CompletionResultType]::ParameterName, 'When the state store cannot be reached within 1s: open warns and goes on with this process''s own limits, closed exits 6')
            [CompletionResult]::new('--breaker-window', '--breaker-window', [CompletionResultType]::ParameterName, 'Outcomes the circuit breaker remembers per origin (5 to 1000)')
            [CompletionResult]::new('--breaker-min-success', '--breaker-min-success', [CompletionResultType]::ParameterName, 'Open the breaker when the success rate over the window (at least 5 outcomes) falls below this')
            [CompletionResult]::new('--breaker-max-p95', '--breaker-max-p95', [CompletionResultType]::ParameterName, 'Open the breaker when the window''s p95 latency exceeds this')
            [CompletionResult]::new('--breaker-cooldown', '--breaker-cooldown', [CompletionResultType]::ParameterName, 'How long an open breaker stays open before one probe; doubles on each failed probe, up to 10m')
            [CompletionResult]::new('--fallback', '--fallback', [CompletionResultType]::ParameterName, 'Body printed when the run ends with exit 1, 5 or 6: JSON, @FILE, or last (the last good body in --state)')
            [CompletionResult]::new('-k', '-k', [CompletionResultType]::ParameterName, 'Accept any TLS certificate')
            [CompletionResult]::new('--insecure', '--insecure', [CompletionResultType]::ParameterName, 'Accept any TLS certificate')
            [CompletionResult]::new('-I', '-I ', [CompletionResultType]::ParameterName, 'Send HEAD (curl''s -I): a cheap existence check; the body is empty')
            [CompletionResult]::new('--head', '--head', [CompletionResultType]::ParameterName, 'Send HEAD (curl''s -I): a cheap existence check; the body is empty')
            [CompletionResult]::new('--no-conditional', '--no-conditional', [CompletionResultType]::ParameterName, 'Send no If-None-Match / If-Modified-Since from the last 2xx''s ETag / Last-Modified [default: conditional polls, a 304 judged on the body kept]')
            [CompletionResult]::new('--any', '--any', [CompletionResultType]::ParameterName, 'Done as soon as one URL is done; the others are abandoned [default: all must be done]')
            [CompletionResult]::new('--paginate', '--paginate', [CompletionResultType]::ParameterName, 'Read every page a Link: rel="next" names; the filters get an array')
            [CompletionResult]::new('--submit', '--submit', [CompletionResultType]::ParameterName, 'The request starts an operation: send it once (a PUT or DELETE is re-sent on transient failures), then poll the status URL its reply names with GET, or a PUT''s or PATCH''s own URL when it names none (ARM''s body polling); a reply that is already done or failed ends the run')
            [CompletionResult]::new('--location-trusted', '--location-trusted', [CompletionResultType]::ParameterName, 'Also send Authorization, Cookie and -u to another origin')
            [CompletionResult]::new('--watch', '--watch', [CompletionResultType]::ParameterName, 'Keep each reply open and judge what it streams, event by event (SSE, JSON streams, long polls, blocking queries); when a reply ends, ask again, resuming')
            [CompletionResult]::new('--retry-non-idempotent', '--retry-non-idempotent', [CompletionResultType]::ParameterName, 'Retry POST and PATCH like GET, even when the request may have been processed')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'One line per attempt on stderr; -vv adds response headers')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'One line per attempt on stderr; -vv adds response headers')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only the final error line')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only the final error line')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
