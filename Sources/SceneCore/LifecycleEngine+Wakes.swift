/// Background wakes (R34): scheduled tasks, notifications, background modes.
extension LifecycleEngine {
    mutating func applyBackground(_ command: Command, effects: inout [Effect]) throws(LifecycleError) -> CommandResult {
        throw .invalidArgument(name: "command", reason: "background work is not implemented yet")
    }
}
