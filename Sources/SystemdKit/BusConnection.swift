import CSystemd
import Glibc

/// A D-Bus client connection (sd-bus) driven by an `EventLoop`.
///
/// Nothing here blocks: connecting, authenticating, installing matches and calls all complete
/// on the loop, and their outcomes are posted as values to a `LoopInbox`, never handed to a
/// callback into the caller. When the connection drops, sd-bus answers every pending call with
/// a `NoReply` error and then emits `org.freedesktop.DBus.Local.Disconnected`, which a match
/// (`BusMatchRule.disconnected`) turns into a post like any other signal.
///
/// Loop-thread-only, like the loop.
public final class BusConnection {
    public enum Address: Equatable, Sendable {
        /// The system bus: `$DBUS_SYSTEM_BUS_ADDRESS`, else /run/dbus/system_bus_socket.
        case system
        /// An explicit address, e.g. `unix:path=/tmp/test/bus`.
        case address(String)
    }

    /// The sd_bus*; nil once closed.
    private var bus: OpaquePointer?
    private var boxes: [ObjectIdentifier: BusSlotBox] = [:]

    /// Connects and attaches to `loop`. Throws when sd-bus refuses at once (a malformed
    /// address, no socket at the path); a peer that fails later shows as `Disconnected`.
    public init(_ address: Address, loop: EventLoop, description: String = "scened") throws(SystemdError) {
        var created: OpaquePointer?
        try SystemdError.check(sd_bus_new(&created), "sd_bus_new")
        // sd_bus_new returned >= 0, so it stored a bus.
        let bus = created!
        do throws(SystemdError) {
            try Self.configure(bus, address, description)
            try SystemdError.check(sd_bus_start(bus), "sd_bus_start")
            try SystemdError.check(sd_bus_attach_event(bus, loop.event, 0), "sd_bus_attach_event")
        } catch {
            _ = sd_bus_close_unref(bus)
            throw error
        }
        self.bus = bus
    }

    private static func configure(_ bus: OpaquePointer, _ address: Address, _ description: String) throws(SystemdError) {
        switch address {
        case .system:
            let fromEnvironment = getenv("DBUS_SYSTEM_BUS_ADDRESS").map { String(cString: $0) }
            let text = fromEnvironment ?? "unix:path=/run/dbus/system_bus_socket"
            try SystemdError.check(sd_bus_set_address(bus, text), "sd_bus_set_address")
            try SystemdError.check(sd_bus_set_trusted(bus, 0), "sd_bus_set_trusted")
        case .address(let text):
            try SystemdError.check(sd_bus_set_address(bus, text), "sd_bus_set_address")
        }
        try SystemdError.check(sd_bus_set_bus_client(bus, 1), "sd_bus_set_bus_client")
        try SystemdError.check(sd_bus_negotiate_fds(bus, 1), "sd_bus_negotiate_fds")
        try SystemdError.check(sd_bus_set_description(bus, description), "sd_bus_set_description")
        // Closing at the loop's exit would flush, which blocks; the owner closes it instead.
        try SystemdError.check(sd_bus_set_close_on_exit(bus, 0), "sd_bus_set_close_on_exit")
    }

    deinit { close() }

    /// Closes the connection: no match or call posts from now on, pending calls are dropped
    /// unanswered, and the bus goes once sd-bus no longer uses it.
    public func close() {
        guard let bus else { return }
        self.bus = nil
        for box in boxes.values { box.handler = nil }
        // sd-bus keeps the bus alive while it is inside one of its callbacks, so this is safe
        // from a handler too; the slots are freed with the bus (their boxes then released).
        _ = sd_bus_close_unref(bus)
    }

    public var isOpen: Bool {
        guard let bus else { return false }
        return sd_bus_is_open(bus) > 0
    }

    /// Our unique name on the bus once the broker has said hello, e.g. `:1.42`.
    public var uniqueName: String? {
        guard let bus else { return nil }
        var name: UnsafePointer<CChar>?
        guard sd_bus_get_unique_name(bus, &name) >= 0, let name else { return nil }
        return String(cString: name)
    }

    /// Signals matching `rule` are posted as `input(message)` to `inbox`. The rule is
    /// installed on the broker asynchronously; if the broker refuses it, sd-bus closes the
    /// connection (which then shows as `Disconnected`).
    @discardableResult
    public func addMatch<Input>(
        _ rule: BusMatchRule, posting input: @escaping (BusMessage) -> Input, to inbox: LoopInbox<Input>
    ) throws(SystemdError) -> BusSlot {
        try register("sd_bus_add_match_async", { inbox.post(input($0)) }) { bus, slot, userdata in
            sd_bus_add_match_async(bus, slot, rule.description, busSlotCallback, nil, userdata)
        }
    }

    /// Sends `call`; its reply (or the error, including a timeout after `timeoutUSec`, 0 for
    /// sd-bus's 25 s default) is posted as `input(reply)` to `inbox`, exactly once, unless the
    /// connection is closed first.
    @discardableResult
    public func call<Input>(
        _ call: BusMethodCall, timeoutUSec: UInt64 = 0,
        posting input: @escaping (BusReply) -> Input, to inbox: LoopInbox<Input>
    ) throws(SystemdError) -> BusSlot {
        guard let bus else { throw SystemdError(errno: ENOTCONN, function: "sd_bus_call_async") }
        var created: OpaquePointer?
        try SystemdError.check(
            sd_bus_message_new_method_call(bus, &created, call.destination, call.path, call.interface, call.member),
            "sd_bus_message_new_method_call")
        let message = created!
        defer { sd_bus_message_unref(message) }
        for argument in call.arguments {
            try SystemdError.check(argument.append(to: message), "sd_bus_message_append_basic")
        }
        let handler: (BusMessage) -> Void = { reply in
            if let error = reply.error { inbox.post(input(.failure(error))) } else { inbox.post(input(.success(reply))) }
        }
        return try register("sd_bus_call_async", handler) { _, slot, userdata in
            sd_bus_call_async(bus, slot, message, busSlotCallback, userdata, timeoutUSec)
        }
    }

    /// Creates a slot through `add` with a retained box as userdata and makes it floating.
    private func register(
        _ function: String, _ handler: @escaping (BusMessage) -> Void,
        add: (OpaquePointer, UnsafeMutablePointer<OpaquePointer?>, UnsafeMutableRawPointer) -> Int32
    ) throws(SystemdError) -> BusSlot {
        guard let bus else { throw SystemdError(errno: ENOTCONN, function: function) }
        let box = BusSlotBox(handler: handler)
        let userdata = Unmanaged.passRetained(box).toOpaque()
        var created: OpaquePointer?
        let r = add(bus, &created, userdata)
        guard r >= 0, let slot = created else {
            Unmanaged<BusSlotBox>.fromOpaque(userdata).release()
            throw SystemdError(returnCode: r, function: function)
        }
        // From here on the C side's retain is given back by the destroy callback.
        _ = sd_bus_slot_set_destroy_callback(slot) { userdata in
            if let userdata { Unmanaged<BusSlotBox>.fromOpaque(userdata).takeRetainedValue().slotWasFreed() }
        }
        box.slot = slot
        box.connection = self
        boxes[ObjectIdentifier(box)] = box
        // Floating: the bus owns the slot, and the slot does not keep the bus alive.
        _ = sd_bus_slot_set_floating(slot, 1)
        sd_bus_slot_unref(slot)
        return BusSlot(box: box)
    }

    func forget(_ box: BusSlotBox) {
        boxes[ObjectIdentifier(box)] = nil
    }

    /// How many matches and calls are live (for tests and leak checks).
    public var liveSlots: Int { boxes.count }
}

extension BusMatchRule {
    /// sd-bus's own signal that the connection is gone (never from the bus: the broker
    /// refuses messages on the Local interface).
    public static let disconnected = BusMatchRule(
        path: "/org/freedesktop/DBus/Local", interface: "org.freedesktop.DBus.Local", member: "Disconnected")!

    /// The sender sd-bus gives the messages it makes up itself, such as `Disconnected`.
    public static let localSender = "org.freedesktop.DBus.Local"
}
