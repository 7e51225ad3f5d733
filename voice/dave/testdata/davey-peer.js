// davey-peer drives @snazzah/davey DAVE sessions for the Go interop test.
// It reads one JSON command per line on stdin and writes one JSON reply
// per line on stdout. Bytes travel as hex. Each command names its session
// with "s"; "init" creates it.
'use strict';
const readline = require('readline');
const davey = require('@snazzah/davey');

const sessions = new Map();
const hex = (b) => Buffer.from(b).toString('hex');
const buf = (h) => Buffer.from(h || '', 'hex');

const AUDIO = 0; // MediaType.AUDIO (const enums are not exported at runtime)

const handlers = {
  init(c) {
    sessions.set(c.s, new davey.DAVESession(1, c.userId, c.channelId));
    return {};
  },
  externalSender(c, s) { s.setExternalSender(buf(c.hex)); return {}; },
  keyPackage(c, s) { return { hex: hex(s.getSerializedKeyPackage()) }; },
  proposals(c, s) {
    const r = s.processProposals(c.op, buf(c.hex), c.recognized);
    return { commit: r.commit ? hex(r.commit) : '', welcome: r.welcome ? hex(r.welcome) : '' };
  },
  commit(c, s) { s.processCommit(buf(c.hex)); return {}; },
  welcome(c, s) { s.processWelcome(buf(c.hex)); return {}; },
  encrypt(c, s) { return { hex: hex(s.encryptOpus(buf(c.hex))) }; },
  decrypt(c, s) { return { hex: hex(s.decrypt(c.userId, AUDIO, buf(c.hex))) }; },
  async verificationCode(c, s) { return { code: await s.getVerificationCode(c.userId) }; },
  state(c, s) {
    return {
      epoch: s.epoch === null ? -1 : Number(s.epoch),
      leaf: s.ownLeafIndex === null ? -1 : s.ownLeafIndex,
      ready: s.ready,
      status: s.status,
      privacyCode: s.voicePrivacyCode,
    };
  },
};

// Commands run one at a time, in order, so replies match requests.
let queue = Promise.resolve();
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  queue = queue.then(async () => {
    let reply;
    try {
      const c = JSON.parse(line);
      const h = handlers[c.cmd];
      if (!h) throw new Error('unknown command ' + c.cmd);
      const s = sessions.get(c.s);
      if (c.cmd !== 'init' && !s) throw new Error('unknown session ' + c.s);
      reply = await h(c, s);
    } catch (e) {
      reply = { error: String(e && e.message ? e.message : e) };
    }
    process.stdout.write(JSON.stringify(reply) + '\n');
  });
});
