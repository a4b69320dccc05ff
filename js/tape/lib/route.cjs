// route.cjs: point this process at a replay proxy for the length of one tape, then put everything back.
//
// Three things change, and restore() undoes each:
//
// * process.env gets what blackbox gives a wrapped agent (the proxy variables, the CA
//   bundles, NODE_OPTIONS with the Node preload, placeholder API keys), so clients
//   built inside the test find a key and child processes spawned without an explicit
//   env inherit the tape. Under jest, whose tests see a copy of process.env, both the
//   copy and the real one change.
// * fetch: Node 20's global fetch ignores HTTPS_PROXY. blackbox's own preload
//   (blackbox_mitm/proxy/node_preload.cjs, the file NODE_OPTIONS names) installs a
//   dispatcher that tunnels through the proxy; it is evaluated here, unchanged, in
//   Node's main realm (jest runs tests in a realm of their own, but fetch belongs to
//   the main one) with the tape's environment, and the previous dispatcher comes back
//   afterwards. Its TLS trusts the CA of the replay on top of Node's roots.
// * node:https: https.globalAgent becomes an agent that tunnels with HTTP CONNECT to
//   the proxy (loopback stays direct, as NO_PROXY says) and trusts the same CA.
//   Requests that bring their own agent are not routed; plain node:http is not either.
'use strict';

const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const net = require('node:net');
const tls = require('node:tls');
const vm = require('node:vm');

const { TapeError } = require('./errors.cjs');

const MAIN = vm.runInThisContext('globalThis');
const DISPATCHER = Symbol.for('undici.globalDispatcher.1');

/** What the replay's environment changes relative to the one blackbox was started with. */
function envDelta(launched, replayEnv) {
  const set = {};
  for (const [key, value] of Object.entries(replayEnv)) {
    if (launched[key] !== value) set[key] = value;
  }
  const unset = Object.keys(launched).filter((key) => !(key in replayEnv));
  return { set, unset };
}

function applyDelta(base, delta) {
  const env = { ...base, ...delta.set };
  for (const key of delta.unset) delete env[key];
  return env;
}

function preloadPath(nodeOptions) {
  const found = [...String(nodeOptions || '').matchAll(/--require[= ](?:"([^"]+)"|(\S+))/g)]
    .map((m) => m[1] || m[2])
    .filter((p) => p.endsWith('node_preload.cjs'));
  if (found.length === 0) {
    throw new TapeError('TAPE_START', `the replay's environment names no Node preload (NODE_OPTIONS=${nodeOptions || ''})`);
  }
  return found[found.length - 1];
}

/** A TLS context trusting Node's roots plus the replay's CA file (which keeps the user's own extra CAs). */
function trustingContext(replayEnv) {
  const file = replayEnv.NODE_EXTRA_CA_CERTS;
  try {
    return tls.createSecureContext({ ca: [...tls.rootCertificates, fs.readFileSync(file, 'utf8')] });
  } catch (err) {
    throw new TapeError('TAPE_START', `cannot read the replay's CA certificate ${file}: ${err.message}`, { cause: err });
  }
}

function noProxyMatcher(value) {
  const entries = String(value || '')
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((e) => e.toLowerCase().replace(/^\*?\./, ''));
  return (host) => {
    const h = String(host).toLowerCase().replace(/^\[|\]$/g, '');
    return entries.some((e) => e === '*' || h === e || h.endsWith(`.${e}`));
  };
}

/** https.Agent whose connections go through the proxy's CONNECT tunnel. */
class TunnelAgent extends https.Agent {
  constructor(proxyUrl, bypass, secureContext) {
    super({ keepAlive: true });
    this.proxy = new URL(proxyUrl);
    this.bypass = bypass;
    this.secureContext = secureContext;
  }

  createConnection(options, callback) {
    const host = options.host || options.hostname || 'localhost';
    const port = Number(options.port) || 443;
    const secure = options.ca || options.secureContext ? options : { ...options, secureContext: this.secureContext };
    if (this.bypass(host)) return tls.connect(secure);
    const authority = `${net.isIPv6(host) ? `[${host}]` : host}:${port}`;
    const req = http.request({
      host: this.proxy.hostname,
      port: Number(this.proxy.port) || 80,
      method: 'CONNECT',
      path: authority,
      headers: { host: authority },
      agent: false,
    });
    req.once('connect', (res, socket, head) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        return callback(new Error(`proxy ${this.proxy.host} refused CONNECT ${authority}: ${res.statusCode}`));
      }
      if (head && head.length) socket.unshift(head);
      const servername = options.servername || (net.isIP(host) ? undefined : host);
      callback(null, tls.connect({ ...secure, socket, servername }));
    });
    req.once('error', (err) => callback(err));
    req.end();
    return undefined;
  }
}

/** Install the preload's fetch dispatcher in the main realm; return it (the previous one is the caller's to keep). */
function installFetchDispatcher(preload, replayEnv, secureContext) {
  if (typeof MAIN.fetch !== 'function') return null;
  MAIN.fetch('data:,').catch(() => {}); // makes undici install its global dispatcher
  const before = MAIN[DISPATCHER];
  let said = '';
  const trustingTls = Object.assign(Object.create(tls), {
    connect(options, ...rest) {
      if (options && typeof options === 'object' && options.ca === undefined && options.secureContext === undefined) {
        options = { ...options, secureContext };
      }
      return tls.connect(options, ...rest);
    },
  });
  // The preload also sets node:https's global agent (for processes it starts in); here node:https is routed below,
  // with the agent put back afterwards, so the preload sets it on a copy and the caller's agent stays the caller's.
  const httpsCopy = Object.create(require('node:https'));
  const preloadRequire = (name) => {
    if (name === 'node:tls' || name === 'tls') return trustingTls;
    if (name === 'node:https' || name === 'https') return httpsCopy;
    return require(name);
  };
  const env = { ...replayEnv };
  delete env.NODE_USE_ENV_PROXY; // we route fetch ourselves; the preload steps aside when it is set
  const shim = { env, stderr: { write: (text) => (said += text) } };
  let source;
  try {
    source = fs.readFileSync(preload, 'utf8');
  } catch (err) {
    throw new TapeError('TAPE_START', `cannot read blackbox's Node preload ${preload}: ${err.message}`, { cause: err });
  }
  const install = new vm.Script(`(function (require, process) {${source}\n})`, { filename: preload }).runInThisContext();
  install(preloadRequire, shim);
  if (MAIN[DISPATCHER] === before) {
    throw new TapeError('TAPE_START', `blackbox's Node preload did not route fetch through the replay${said ? `: ${said.trim()}` : ''}`);
  }
  return { before, installed: MAIN[DISPATCHER] };
}

function setEnv(target, delta) {
  const saved = {};
  for (const key of [...Object.keys(delta.set), ...delta.unset]) saved[key] = target[key];
  Object.assign(target, delta.set);
  for (const key of delta.unset) delete target[key];
  return () => {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete target[key];
      else target[key] = value;
    }
  };
}

/** Route this process through the replay whose environment is replayEnv; return { restore }. */
function activate(delta, replayEnv) {
  const secureContext = trustingContext(replayEnv);
  const undo = [];
  const restore = () => {
    while (undo.length) undo.pop()();
  };
  try {
    undo.push(setEnv(process.env, delta));
    const mainEnv = MAIN.process && MAIN.process.env;
    if (mainEnv && mainEnv !== process.env) undo.push(setEnv(mainEnv, delta));

    const fetchRoute = installFetchDispatcher(preloadPath(replayEnv.NODE_OPTIONS), replayEnv, secureContext);
    if (fetchRoute) {
      undo.push(() => {
        MAIN[DISPATCHER] = fetchRoute.before;
        Promise.resolve(fetchRoute.installed.destroy()).catch(() => {});
      });
    }

    const previousAgent = https.globalAgent;
    const agent = new TunnelAgent(replayEnv.HTTPS_PROXY, noProxyMatcher(replayEnv.NO_PROXY || replayEnv.no_proxy), secureContext);
    https.globalAgent = agent;
    undo.push(() => {
      https.globalAgent = previousAgent;
      agent.destroy();
    });
  } catch (err) {
    restore();
    throw err;
  }
  return { restore };
}

module.exports = { activate, applyDelta, envDelta, MAIN };
