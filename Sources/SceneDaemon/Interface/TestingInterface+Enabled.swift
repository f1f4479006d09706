import SceneInterface

extension TestingInterface {
    /// Whether the daemon serves the test hooks: SCENED_TEST_HOOKS=1 in its environment.
    static var enabled: Bool { DaemonPaths.environment("SCENED_TEST_HOOKS") == "1" }
}
