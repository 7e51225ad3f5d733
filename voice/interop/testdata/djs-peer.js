// djs-peer.js runs @discordjs/voice (with @snazzah/davey for DAVE) as an
// independent voice client for glyphoxa's interop tests. It reads one JSON
// command a line on stdin and answers each with one JSON line on stdout,
// in order; bytes travel as hex. It joins through an adapter the test
// feeds by hand: the voice state and voice server updates a bot would get
// from the main gateway. Written for glyphoxa's tests; test-only.
'use strict';

const readline = require('node:readline');
const { Readable } = require('node:stream');
const voice = require('@discordjs/voice');

const debug = process.env.DJS_PEER_DEBUG ? (m) => process.stderr.write(`djs: ${m}\n`) : null;

// Diagnostics: every RTP packet the receiver gets from a known SSRC is
// logged with what became of it, so a frame discord.js never hands out
// is accounted for (not on the wire; refused by the transport cipher; a
// DAVE decrypt failure, with davey's error; dropped for want of an SSRC
// or a subscription). The log goes out with each `received` reply.
const fates = new Map(); // user id -> [{seq, ts, fate, error}]
let lastDAVEError = null;
{
  const davey = require('@snazzah/davey');
  const decrypt = davey.DAVESession.prototype.decrypt;
  davey.DAVESession.prototype.decrypt = function (...args) {
    try {
      return decrypt.apply(this, args);
    } catch (e) {
      lastDAVEError = String(e && e.message ? e.message : e);
      throw e;
    }
  };
  const onUdpMessage = voice.VoiceReceiver.prototype.onUdpMessage;
  voice.VoiceReceiver.prototype.onUdpMessage = function (msg) {
    if (msg.length <= 12) return onUdpMessage.call(this, msg);
    const user = this.ssrcMap.get(msg.readUInt32BE(8));
    const entry = { seq: msg.readUInt16BE(2), ts: msg.readUInt32BE(4), ssrc: msg.readUInt32BE(8), fate: 'delivered' };
    if (!user) entry.fate = 'unknown SSRC';
    else if (!this.subscriptions.get(user.userId)) entry.fate = 'no subscription';
    else if (!this.connectionData.secretKey) entry.fate = 'no transport key';
    const status = this.voiceConnection.state.status;
    const code = this.voiceConnection.state.networking?.state.code;
    if (status !== 'ready' || (code !== 4 && code !== 5)) entry.state = `${status}/${code}`;
    this.udpEntry = entry;
    lastDAVEError = null;
    try {
      return onUdpMessage.call(this, msg);
    } finally {
      this.udpEntry = null;
      if (entry.fate !== 'delivered') {
        // The RTP X bit, and the two bytes after the fixed header, which
        // parsePacket takes for an extension profile when they read BEDE
        // whatever X says.
        entry.x = (msg[0] >> 4) & 1;
        entry.bytes12 = msg.subarray(12, 16).toString('hex');
      }
      const list = fates.get(user ? user.userId : `ssrc ${entry.ssrc}`) ?? [];
      list.push(entry);
      fates.set(user ? user.userId : `ssrc ${entry.ssrc}`, list);
    }
  };
  const parsePacket = voice.VoiceReceiver.prototype.parsePacket;
  voice.VoiceReceiver.prototype.parsePacket = function (...args) {
    const entry = this.udpEntry;
    let out;
    try {
      out = parsePacket.apply(this, args);
    } catch (e) {
      if (entry) { entry.fate = 'transport decrypt failed'; entry.error = String(e); }
      throw e;
    }
    if (entry && !out) {
      entry.fate = 'DAVE decrypt failed';
      entry.error = lastDAVEError;
      const d = this.voiceConnection.state.networking?.state.dave;
      if (d) {
        entry.dave = { pendingTransitions: [...d.pendingTransitions.keys()], reinitializing: d.reinitializing,
          consecutiveFailures: d.consecutiveFailures, epoch: String(d.session?.epoch ?? '') };
      }
    }
    return out;
  };
}

let connection = null;
let payloads = []; // gateway op 4 payloads the adapter was asked to send
const received = new Map(); // user id -> hex frames
let transitions = 0;

function networking() {
  const s = connection?.state;
  return s && s.networking ? s.networking.state : null;
}

function daveSession() {
  return networking()?.dave ?? null;
}

function waitFor(what, cond, ms) {
  return new Promise((resolve, reject) => {
    const start = Date.now();
    const tick = () => {
      let ok = false;
      try { ok = cond(); } catch (e) { reject(e); return; }
      if (ok) { resolve(); return; }
      if (Date.now() - start > ms) { reject(new Error(`timed out waiting for ${what}; ${JSON.stringify(describe())}`)); return; }
      setTimeout(tick, 10);
    };
    tick();
  });
}

// kernelDrops is how many datagrams the kernel dropped for the UDP
// socket (its receive buffer full), from /proc/net/udp; -1 if unknown.
function kernelDrops() {
  try {
    const port = networking()?.udp?.socket.address().port;
    if (!port) return -1;
    const hex = port.toString(16).toUpperCase().padStart(4, '0');
    for (const line of require('node:fs').readFileSync('/proc/net/udp', 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 12 && f[1].endsWith(`:${hex}`)) return Number(f[f.length - 1]);
    }
  } catch { /* not Linux */ }
  return -1;
}

function describe() {
  const n = networking();
  const d = daveSession();
  return {
    status: connection?.state.status ?? 'none',
    networking: n?.code ?? -1,
    ready: Boolean(d?.session?.ready),
    epoch: d?.session?.epoch != null ? String(d.session.epoch) : '',
    privacyCode: d?.voicePrivacyCode ?? '',
    daveVersion: d?.protocolVersion ?? 0,
    transitions,
    mode: n?.connectionData?.encryptionMode ?? '',
  };
}

const commands = {
  // join {guildId, channelId, userId, sessionId, token, endpoint}: join as a
  // bot would, the main gateway's two updates played by this adapter.
  async join(c) {
    payloads = [];
    connection = voice.joinVoiceChannel({
      guildId: c.guildId,
      channelId: c.channelId,
      selfDeaf: false,
      debug: Boolean(debug),
      adapterCreator: (methods) => ({
        sendPayload(payload) {
          payloads.push(payload);
          if (payload.d && payload.d.channel_id) {
            setImmediate(() => {
              methods.onVoiceStateUpdate({ guild_id: c.guildId, channel_id: payload.d.channel_id, user_id: c.userId,
                session_id: c.sessionId, self_deaf: false, self_mute: false });
              methods.onVoiceServerUpdate({ guild_id: c.guildId, token: c.token, endpoint: c.endpoint });
            });
          }
          return true;
        },
        destroy() {},
      }),
    });
    if (debug) connection.on('debug', debug);
    connection.on('error', (e) => debug && debug(`error: ${e}`));
    connection.on('stateChange', (o, n) => {
      if (o.networking !== n.networking && n.networking) {
        n.networking.on('transitioned', () => { transitions++; });
      }
    });
    await voice.entersState(connection, voice.VoiceConnectionStatus.Ready, 10_000);
    return { ...describe(), payloads };
  },

  // dave {notCode}: wait until DAVE is ready with a privacy code (other
  // than notCode, when given).
  async dave(c) {
    await waitFor('DAVE', () => {
      const d = daveSession();
      return d?.session?.ready && d.voicePrivacyCode && d.voicePrivacyCode !== c.notCode && d.pendingTransitions.size === 0;
    }, 10_000);
    return describe();
  },

  // waitNetworking {code}: wait until the networking state has code (4 ready).
  async waitNetworking(c) {
    await waitFor(`networking state ${c.code}`, () => networking()?.code === c.code && connection.state.status === 'ready', 10_000);
    return describe();
  },

  state() { return describe(); },

  // knows {userId}: wait until the receiver maps an SSRC to the user (it
  // drops packets from SSRCs it has not seen a speaking op for).
  async knows(c) {
    await waitFor(`an SSRC for ${c.userId}`, () => Boolean(connection.receiver.ssrcMap.get(c.userId)), 5_000);
    return {};
  },

  // subscribe {userId}: keep what that user says.
  subscribe(c) {
    received.set(c.userId, []);
    const stream = connection.receiver.subscribe(c.userId, { end: { behavior: voice.EndBehaviorType.Manual } });
    stream.on('data', (chunk) => {
      const list = received.get(c.userId);
      if (list) list.push(Buffer.from(chunk).toString('hex'));
    });
    stream.on('error', (e) => debug && debug(`receive ${c.userId}: ${e}`));
    return {};
  },

  // received {userId, count, ms}: the frames heard from the user so far,
  // waiting up to ms for count of them; the list is emptied.
  async received(c) {
    const list = () => received.get(c.userId) ?? [];
    try {
      await waitFor('frames', () => list().length >= (c.count ?? 0), c.ms ?? 3000);
    } catch { /* return what came */ }
    // Let stragglers (the silence tail) arrive.
    await new Promise((r) => setTimeout(r, 200));
    const out = list();
    received.set(c.userId, []);
    const log = fates.get(c.userId) ?? [];
    fates.set(c.userId, []);
    return { frames: out, packets: log.length, lost: log.filter((e) => e.fate !== 'delivered'), seqs: log.map((e) => e.seq),
      kernelDrops: kernelDrops() };
  },

  // play {frames: [hex]}: send Opus frames through an audio player, 20 ms
  // apart, as a bot plays a prepared Opus stream; resolves when idle.
  async play(c) {
    const player = voice.createAudioPlayer({ behaviors: { noSubscriber: voice.NoSubscriberBehavior.Play } });
    const sub = connection.subscribe(player);
    const resource = voice.createAudioResource(Readable.from(c.frames.map((h) => Buffer.from(h, 'hex'))),
      { inputType: voice.StreamType.Opus });
    player.play(resource);
    await voice.entersState(player, voice.AudioPlayerStatus.Playing, 5_000);
    await voice.entersState(player, voice.AudioPlayerStatus.Idle, 60_000);
    sub?.unsubscribe();
    player.stop(true);
    return {};
  },

  // leave: leave the channel (the voice socket closes normally).
  async leave() {
    const conn = connection;
    conn.destroy();
    await voice.entersState(conn, voice.VoiceConnectionStatus.Destroyed, 5_000);
    connection = null;
    return { payloads };
  },
};

const rl = readline.createInterface({ input: process.stdin });
let queue = Promise.resolve();
rl.on('line', (line) => {
  queue = queue.then(async () => {
    let reply;
    try {
      const c = JSON.parse(line);
      const f = commands[c.cmd];
      if (!f) throw new Error(`unknown command ${c.cmd}`);
      reply = await f(c);
    } catch (e) {
      reply = { error: String(e && e.stack ? e.stack : e) };
    }
    process.stdout.write(JSON.stringify(reply) + '\n');
  });
});
rl.on('close', () => {
  queue.then(() => {
    if (connection) connection.destroy();
    setTimeout(() => process.exit(0), 50);
  });
});
