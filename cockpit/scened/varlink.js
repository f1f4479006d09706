/*
 * A Varlink client over Cockpit's stream channels to a unix socket. Varlink messages are JSON
 * objects, each ended by a NUL byte; a call with "more" is answered by replies that carry
 * "continues": true until the last. The channel is opened by the logged-in user's bridge, so the
 * daemon sees (and authorizes) that user's own credentials.
 */
"use strict";

(function (global) {
    // Larger replies are refused rather than buffered: the page must stay usable.
    const MAX_FRAME_BYTES = 16 * 1024 * 1024;
    const CALL_TIMEOUT_MS = 15000;

    class VarlinkError extends Error {
        constructor(error, parameters) {
            super(parameters && parameters.message ? error + ": " + parameters.message : error);
            this.error = error;
            this.parameters = parameters || {};
        }
    }

    // The channel closed or could not be opened (no socket, no permission, the daemon went away).
    class ChannelError extends Error {
        constructor(problem, message) {
            super(message || problem);
            this.problem = problem;
        }
    }

    function channelError(info) {
        if (info && info.problem)
            return new ChannelError(info.problem, info.message || global.cockpit.message(info));
        return new ChannelError("disconnected", "scened closed the connection");
    }

    // Splits a byte stream into NUL-terminated JSON messages; a partial message waits for the
    // rest of it in the next chunk.
    class FrameReader {
        constructor() {
            this.parts = [];
            this.size = 0;
            this.decoder = new TextDecoder("utf-8");
        }

        push(chunk) {
            const bytes = chunk instanceof Uint8Array ? chunk : new TextEncoder().encode(String(chunk));
            const messages = [];
            let start = 0;
            for (let end = bytes.indexOf(0, start); end !== -1; end = bytes.indexOf(0, start)) {
                this.append(bytes.subarray(start, end));
                messages.push(this.take());
                start = end + 1;
            }
            if (start < bytes.length)
                this.append(bytes.subarray(start));
            return messages;
        }

        append(bytes) {
            this.size += bytes.length;
            if (this.size > MAX_FRAME_BYTES)
                throw new ChannelError("protocol-error", "a reply larger than " + MAX_FRAME_BYTES + " bytes");
            this.parts.push(bytes.slice());
        }

        take() {
            const whole = new Uint8Array(this.size);
            let offset = 0;
            for (const part of this.parts) {
                whole.set(part, offset);
                offset += part.length;
            }
            this.parts = [];
            this.size = 0;
            const message = JSON.parse(this.decoder.decode(whole));
            if (message === null || typeof message !== "object" || Array.isArray(message))
                throw new ChannelError("protocol-error", "a reply that is not a JSON object");
            return message;
        }
    }

    function encode(message) {
        const text = new TextEncoder().encode(JSON.stringify(message));
        const frame = new Uint8Array(text.length + 1);
        frame.set(text);
        return frame;
    }

    function openChannel(socket, options) {
        return global.cockpit.channel(Object.assign({ payload: "stream", unix: socket, binary: true }, options));
    }

    /*
     * Plain calls share one channel and are answered in order; a call that gets no answer in
     * time closes it (the replies would no longer match the calls) and fails every waiting call.
     */
    class VarlinkClient {
        constructor(socket, channelOptions) {
            this.socket = socket;
            this.options = channelOptions || {};
            this.channel = null;
            this.waiting = [];
        }

        call(method, parameters) {
            return new Promise((resolve, reject) => {
                const channel = this.ensureChannel();
                const entry = { resolve, reject, timer: null };
                entry.timer = global.setTimeout(() => this.timedOut(channel, method), CALL_TIMEOUT_MS);
                this.waiting.push(entry);
                channel.send(encode({ method, parameters: parameters || {} }));
            });
        }

        ensureChannel() {
            if (this.channel)
                return this.channel;
            const channel = openChannel(this.socket, this.options);
            const reader = new FrameReader();
            channel.addEventListener("message", (_event, data) => this.receive(channel, reader, data));
            channel.addEventListener("close", (_event, info) => this.closed(channel, channelError(info)));
            this.channel = channel;
            return channel;
        }

        receive(channel, reader, data) {
            let replies;
            try {
                replies = reader.push(data);
            } catch (error) {
                this.fail(channel, error instanceof ChannelError ? error : new ChannelError("protocol-error", String(error)));
                return;
            }
            for (const reply of replies) {
                const entry = this.waiting.shift();
                if (!entry) {
                    this.fail(channel, new ChannelError("protocol-error", "a reply nobody asked for"));
                    return;
                }
                global.clearTimeout(entry.timer);
                if (reply.error)
                    entry.reject(new VarlinkError(reply.error, reply.parameters));
                else
                    entry.resolve(reply.parameters || {});
            }
        }

        timedOut(channel, method) {
            this.fail(channel, new ChannelError("timeout", method + ": no answer within " + CALL_TIMEOUT_MS / 1000 + " s"));
        }

        // Fails the waiting calls with this error first: the close event that follows is ignored.
        fail(channel, error) {
            this.closed(channel, error);
            if (channel.valid)
                channel.close(error.problem || "protocol-error");
        }

        closed(channel, error) {
            if (this.channel !== channel)
                return;
            this.channel = null;
            const waiting = this.waiting;
            this.waiting = [];
            for (const entry of waiting) {
                global.clearTimeout(entry.timer);
                entry.reject(error);
            }
        }

        /*
         * A call with "more" on a channel of its own: onReply(parameters, continues) for each
         * reply, then onEnd(error or null) once, when the last reply came, an error came, the
         * channel closed, or close() was called (then with null).
         */
        stream(method, parameters, onReply, onEnd) {
            const channel = openChannel(this.socket, this.options);
            const reader = new FrameReader();
            let ended = false;
            const end = (error) => {
                if (ended)
                    return;
                ended = true;
                if (channel.valid)
                    channel.close();
                onEnd(error);
            };
            channel.addEventListener("message", (_event, data) => {
                if (ended)
                    return;
                try {
                    for (const reply of reader.push(data)) {
                        if (ended)
                            return;
                        if (reply.error)
                            return end(new VarlinkError(reply.error, reply.parameters));
                        onReply(reply.parameters || {}, reply.continues === true);
                        if (reply.continues !== true)
                            return end(null);
                    }
                } catch (error) {
                    end(error instanceof ChannelError ? error : new ChannelError("protocol-error", String(error)));
                }
            });
            channel.addEventListener("close", (_event, info) => end(channelError(info)));
            channel.send(encode({ method, parameters: parameters || {}, more: true }));
            return { close: () => end(null) };
        }

        close() {
            if (this.channel)
                this.fail(this.channel, new ChannelError("closed", "closed"));
        }
    }

    global.Varlink = { VarlinkClient, VarlinkError, ChannelError, FrameReader };
})(window);
