import Testing

/// Tests that touch process-global state: environment variables (NOTIFY_SOCKET, WATCHDOG_*,
/// LISTEN_*, JOURNAL_STREAM), signal delivery, and child processes spawned from a copy of the
/// environment. They run one at a time; the nested suites live in their own files.
@Suite(.serialized) struct ProcessGlobalStateTests {}
