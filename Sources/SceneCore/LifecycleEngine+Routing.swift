extension LifecycleEngine {
    /// Routing's commands (open, activation conditions).
    mutating func applyRouting(_ command: Command, effects: inout [Effect]) throws(LifecycleError) -> CommandResult {
        throw .invalidArgument(name: "command", reason: "routing is not built yet")
    }
}
