import SceneCore
import Varlink

// Where the pressure level comes from: PSI as configured, and the operator's override.

extension Daemon {
    func applyPSI() {
        let wanted = settings.pressureSources.contains(.psi)
        if wanted {
            if let psi = reclaim.psi, psi.settings == settings.psiSettings { return }
            reclaim.psi?.stop()
            let psi = PSISource(loop: loop, settings: settings.psiSettings)
            let me = Unmanaged.passUnretained(self)
            psi.onChange = { me.takeUnretainedValue().requestPass() }
            reclaim.psi = psi
            psi.start()
        } else if let psi = reclaim.psi {
            psi.stop()
            reclaim.psi = nil
        }
    }

    /// Operator override (SetPressure / ClearPressure).
    func setPressureOverride(_ level: PressureLevel?, duration: Int64?) {
        if let level, level > .normal {
            let until = duration.map { manager.clock.now() + TimeSpan(microseconds: $0) }
            reclaim.setOverride(PressureOverride(level: level, until: until))
        } else {
            reclaim.setOverride(nil)
        }
        requestPass()
        // Evaluate now so that the reply already shows the new level.
        reclaim.evaluate()
    }
}
