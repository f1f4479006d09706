import CSystemd

/// State shared by a match or pending call and sd-bus: the handler, retained by sd-bus as
/// the slot's userdata and given back by the slot's destroy callback.
final class BusSlotBox {
    /// The sd-bus slot; nil once freed. Slots are floating (the bus owns them).
    var slot: OpaquePointer?
    var handler: ((BusMessage) -> Void)?
    weak var connection: BusConnection?

    init(handler: @escaping (BusMessage) -> Void) { self.handler = handler }

    static func from(_ userdata: UnsafeMutableRawPointer?) -> BusSlotBox {
        // Every slot is created with a box as userdata (BusConnection.register), never NULL.
        Unmanaged<BusSlotBox>.fromOpaque(userdata!).takeUnretainedValue()
    }

    func slotWasFreed() {
        slot = nil
        handler = nil
        connection?.forget(self)
    }
}

/// The C side of every match and call: hands the message to the box's handler.
let busSlotCallback: sd_bus_message_handler_t = { message, userdata, _ in
    guard let message else { return 0 }
    let box = BusSlotBox.from(userdata)
    if let handler = box.handler { handler(BusMessage(retaining: message)) }
    // 0: other matches for the same message run too.
    return 0
}

/// A signal match or a pending method call on a `BusConnection`.
///
/// The bus owns it: dropping this handle changes nothing. `silence()` stops it from posting;
/// the slot itself goes when its call is answered or when the connection closes. (Freeing an
/// sd-bus slot from inside its own callback is not safe, and a silenced match costs nothing
/// but its rule on the broker.)
public final class BusSlot {
    let box: BusSlotBox

    init(box: BusSlotBox) { self.box = box }

    /// True while it may still post: not silenced, and its call not yet answered.
    public var isActive: Bool { box.slot != nil && box.handler != nil }

    public func silence() { box.handler = nil }
}
