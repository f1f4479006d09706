import Glibc

/// Waits for `events` on `fd`; false on timeout.
func waitFor(_ fd: Int32, _ events: Int16, timeoutMilliseconds: Int32 = 5000) -> Bool {
    var entry = pollfd(fd: fd, events: events, revents: 0)
    return poll(&entry, 1, timeoutMilliseconds) == 1
}
