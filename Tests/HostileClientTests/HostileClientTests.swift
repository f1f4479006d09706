import Testing

/// Careless and hostile clients against the real daemon. Every test starts its own scened with
/// small `[Limits]` so that it is quick, measures what matters (the daemon's CPU and memory, a
/// bystander's service) and bounds every wait; a wedged daemon is killed when its test ends.
///
/// One serialized suite: the tests measure CPU, memory and throughput, which hostile tests
/// running side by side on a small machine would distort for each other.
@Suite("Hostile and careless clients against the real daemon", .serialized)
struct HostileClientTests {}
