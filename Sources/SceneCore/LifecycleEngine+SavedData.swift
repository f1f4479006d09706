/// Where a session's userInfo and restoration data are: memory or the store. Neither method
/// changes what the session is, so neither emits an effect: the store already holds exactly
/// these bytes, and nothing is written.
extension LifecycleEngine {
    /// Leaves the large payloads of `id` to the store, now that `version` is committed. Does
    /// nothing if the session changed since (its details are no longer `version`'s): the newer
    /// payloads are not on disk yet, and their own commit releases them.
    public mutating func releaseSavedData(_ id: SessionID, committed version: SavedDataVersion) {
        guard let index = sessions.index(forKey: id), sessions.values[index].details === version.details else { return }
        let released = version.details.releasingLarge()
        if released !== version.details { sessions.values[index].details = released }
    }

    /// Puts the store's copy of the stored payloads of `id` back in memory (before a
    /// reconnection hands its restoration data to willConnectTo). Payloads already held are
    /// kept; they are newer than anything the store could have.
    public mutating func holdSavedData(_ id: SessionID, userInfo: UserInfo, restoration: RestorationData?) {
        guard let index = sessions.index(forKey: id), sessions.values[index].hasStoredPayload else { return }
        sessions.values[index].details = sessions.values[index].details.holding(userInfo: userInfo,
                                                                                 restoration: restoration)
    }
}
