/// Background modes (UIBackgroundModes, R34): while an app declares one it is not suspended for
/// being idle; pressure still warns, counts and reclaims it, and sleep still suspends it.
extension LifecycleEngine {
    mutating func changeActivity(_ id: AppID, _ modes: BackgroundModes, begin: Bool,
                                 effects: inout [Effect]) throws(LifecycleError) {
        guard !modes.isEmpty, modes.rawValue & ~Self.knownModes.rawValue == 0 else {
            throw .invalidArgument(name: "modes", reason: "name one or more of \(Self.knownModes)")
        }
        guard let slot = apps.slot(of: id) else { throw .noSuchApp(id) }
        let process = apps.records[slot].process
        guard process == .running else {
            throw .invalidTransition(InvalidTransition(
                command: begin ? "begin a background activity for" : "end a background activity of", app: id, session: nil,
                state: process.name, reason: process == .suspended ? "a suspended app runs no code" : "the app is not running"))
        }
        if begin {
            apps.records[slot].activeModes.formUnion(modes)
        } else {
            apps.records[slot].activeModes.subtract(modes)
        }
        refreshActivity(slot, effects: &effects)
        effects.append(.appChanged(id))
    }

    static let knownModes: BackgroundModes = BackgroundModes.named.reduce([]) { $0.union($1.1) }
}
