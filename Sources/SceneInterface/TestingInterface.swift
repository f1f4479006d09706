/// An interface for system tests only, served when the environment has SCENED_TEST_HOOKS=1
/// (a production unit never sets it): it can make the loop hang or
/// livelock and the commit thread stall, to prove the watchdog and what a slow sync releases.
public enum TestingInterface {
    public static let name = "io.scened.Testing"

    public static let text = """
# Test hooks of scened. Served only when SCENED_TEST_HOOKS=1 is in the daemon's environment.
interface io.scened.Testing

# Blocks the daemon's event loop for this many seconds (oneway is best: no reply comes until
# the hang ends, and with a watchdog it never does).
method Hang(seconds: int) -> ()

# Keeps the event loop busy with an always-ready source, so that it iterates but serves no
# client, for this many seconds (0: for ever). The watchdog must see it.
method Livelock(seconds: int) -> ()

# Makes the commit thread sleep this many seconds before its next commit.
method StallCommit(seconds: int) -> ()

# Makes the commit thread sleep this many seconds between writing its next commit and making
# it durable (Durability=full): the batch's events reach attached apps, its replies wait.
method StallSync(seconds: int) -> ()
"""
}
