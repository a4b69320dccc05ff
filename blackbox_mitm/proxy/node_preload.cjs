// node_preload.cjs: make Node's built-in fetch (undici) and node:https's global agent tunnel through
// HTTPS_PROXY / HTTP_PROXY, honouring NO_PROXY.
//
// Loaded by blackbox with NODE_OPTIONS="--require /abs/path/node_preload.cjs" into
// programs nobody adapted. Node 20's global fetch ignores the proxy variables
// (NODE_USE_ENV_PROXY only exists from Node 22.21 / 24.5), so without this a Node
// agent would talk to the provider directly and never be recorded.
//
// How: one synchronous fetch('data:,') makes Node's bundled undici install its
// global dispatcher (an Agent) at Symbol.for('undici.globalDispatcher.1'). We take
// that Agent class - the bundled one, so no npm dependency and no version
// mismatch - and install a new Agent whose `connect` opens an HTTP CONNECT tunnel
// through the proxy (for https: and http: origins alike), then for https: origins
// does TLS over the tunnel with Node's default CA store (which NODE_EXTRA_CA_CERTS
// extends). Hosts matched by NO_PROXY are connected to directly.
//
// Supported: http:// proxies (user:password@ becomes Proxy-Authorization: Basic);
// lower-case variables win over upper-case ones, as in curl, Python and undici;
// NO_PROXY entries separated by commas or spaces: "*", exact host or IP,
// domain suffix ("example.com" also matches "api.example.com"), leading "." or "*.",
// optional ":port". Not supported: https:// or socks proxies (left alone), CIDR
// ranges in NO_PROXY, HTTP/2 to the origin, plain node:http (its global agent is
// left alone), and clients with an agent or dispatcher of their own (an npm undici,
// axios or node-fetch given an agent). node:https requests that use the global agent
// (axios and node-fetch by default, https.get) go through the proxy.
//
// It is a no-op without a proxy variable, when fetch is absent, or when Node's own
// NODE_USE_ENV_PROXY is set. It never writes to stdout; only a failure to install
// is reported, on stderr.
'use strict';

(function installProxyDispatcher() {
  const net = require('node:net');
  const tls = require('node:tls');

  const env = process.env;
  const first = (...names) => {
    for (const name of names) {
      const value = env[name];
      if (value && value.trim()) return value.trim();
    }
    return '';
  };

  function parseProxy(value) {
    if (!value) return null;
    let url;
    try {
      url = new URL(value.includes('://') ? value : `http://${value}`);
    } catch {
      return null;
    }
    if (url.protocol !== 'http:') return null;
    const proxy = { host: stripBrackets(url.hostname), port: Number(url.port) || 80, auth: '' };
    if (url.username || url.password) {
      const creds = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
      proxy.auth = `Basic ${Buffer.from(creds).toString('base64')}`;
    }
    return proxy;
  }

  function stripBrackets(host) {
    return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  }

  function parseNoProxy(value) {
    return value
      .split(/[\s,]+/)
      .filter(Boolean)
      .map((entry) => {
        entry = entry.toLowerCase();
        if (entry === '*') return { any: true };
        let host = entry;
        let port = 0;
        const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
        if (bracketed) {
          host = bracketed[1];
          port = Number(bracketed[2] || 0);
        } else if ((entry.match(/:/g) || []).length === 1) {
          [host, port] = [entry.split(':')[0], Number(entry.split(':')[1]) || 0];
        }
        return { host: host.replace(/^\*?\./, ''), port };
      });
  }

  const httpsProxy = parseProxy(first('https_proxy', 'HTTPS_PROXY'));
  const httpProxy = parseProxy(first('http_proxy', 'HTTP_PROXY'));
  const noProxy = parseNoProxy(first('no_proxy', 'NO_PROXY'));
  if (!httpsProxy && !httpProxy) return;
  if (env.NODE_USE_ENV_PROXY && env.NODE_USE_ENV_PROXY !== '0') return;

  function bypass(hostname, port) {
    const host = hostname.toLowerCase().replace(/\.$/, '');
    return noProxy.some((e) => e.any || ((!e.port || e.port === port) && (host === e.host || host.endsWith(`.${e.host}`))));
  }

  // undici calls connect({hostname, host, protocol, port: '' when default, servername: null, ...}, callback).
  function connect(opts, callback) {
    const secure = opts.protocol === 'https:';
    const hostname = stripBrackets(String(opts.hostname));
    const port = Number(opts.port) || (secure ? 443 : 80);
    const servername = opts.servername || (net.isIP(hostname) ? undefined : hostname);
    const proxy = secure ? httpsProxy : httpProxy;
    let settled = false;
    const settle = (err, socket) => {
      if (settled) return;
      settled = true;
      callback(err, err ? null : socket);
    };

    const secureOver = (options) => {
      const socket = tls.connect({ ...options, host: hostname, servername, ALPNProtocols: ['http/1.1'] });
      const onError = (err) => {
        socket.destroy();
        settle(err);
      };
      socket.once('error', onError);
      socket.once('secureConnect', () => {
        socket.removeListener('error', onError);
        settle(null, socket);
      });
    };

    if (!proxy || bypass(hostname, port)) {
      if (secure) return secureOver({ port });
      const socket = net.connect({ host: hostname, port });
      const onError = (err) => settle(err);
      socket.once('error', onError);
      socket.once('connect', () => {
        socket.removeListener('error', onError);
        settle(null, socket);
      });
      return;
    }

    const authority = `${net.isIPv6(hostname) ? `[${hostname}]` : hostname}:${port}`;
    const tunnel = net.connect({ host: proxy.host, port: proxy.port });
    tunnel.setNoDelay(true);
    tunnel.setKeepAlive(true, 60000);
    const fail = (err) => {
      cleanup();
      tunnel.destroy();
      settle(err);
    };
    const onError = (err) => fail(err);
    const onEnd = () => fail(new Error(`proxy ${proxy.host}:${proxy.port} closed the connection during CONNECT ${authority}`));
    const timer = setTimeout(() => fail(new Error(`proxy CONNECT ${authority} timed out`)), 30000);
    timer.unref();
    let head = Buffer.alloc(0);
    const onReadable = () => {
      let chunk;
      while ((chunk = tunnel.read()) !== null) {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end === -1) {
          if (head.length > 65536) return fail(new Error(`proxy answered CONNECT ${authority} with an oversized header`));
          continue;
        }
        cleanup();
        const status = head.subarray(0, head.indexOf('\r\n')).toString('latin1');
        if (!/^HTTP\/1\.[01] 200(\s|$)/.test(status)) {
          tunnel.destroy();
          const err = new Error(`proxy ${proxy.host}:${proxy.port} refused CONNECT ${authority}: ${status}`);
          err.code = 'ERR_PROXY_CONNECT';
          return settle(err);
        }
        const rest = head.subarray(end + 4);
        if (rest.length) tunnel.unshift(rest);
        if (secure) return secureOver({ socket: tunnel });
        return settle(null, tunnel);
      }
    };
    function cleanup() {
      clearTimeout(timer);
      tunnel.removeListener('readable', onReadable);
      tunnel.removeListener('error', onError);
      tunnel.removeListener('end', onEnd);
    }
    tunnel.on('readable', onReadable);
    tunnel.once('error', onError);
    tunnel.once('end', onEnd);
    tunnel.once('connect', () => {
      const auth = proxy.auth ? `Proxy-Authorization: ${proxy.auth}\r\n` : '';
      tunnel.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${auth}\r\n`);
    });
  }

  // node:https: a global agent whose sockets are tunnels through the proxy (the same connect). Requests that
  // pass their own agent (axios with an agent, https-proxy-agent) are left alone.
  try {
    const https = require('node:https');
    class ProxyTunnelAgent extends https.Agent {
      createConnection(options, oncreate) {
        const hostname = options.hostname || options.host || 'localhost';
        connect({ hostname, port: options.port, protocol: 'https:', servername: options.servername }, oncreate);
        return undefined;
      }
    }
    if (httpsProxy) https.globalAgent = new ProxyTunnelAgent({ keepAlive: true });
  } catch (err) {
    process.stderr.write(`blackbox node_preload: node:https will not use the proxy: ${err && err.message}\n`);
  }

  if (typeof globalThis.fetch !== 'function') return;
  try {
    const key = Symbol.for('undici.globalDispatcher.1');
    // The first fetch call loads the bundled undici, which installs its Agent at `key`.
    fetch('data:,').catch(() => {});
    const current = globalThis[key];
    const Agent = current && Object.getPrototypeOf(current).constructor;
    if (typeof Agent !== 'function' || Agent.name !== 'Agent') {
      throw new Error(`unexpected global dispatcher ${Agent && Agent.name}`);
    }
    globalThis[key] = new Agent({ connect });
  } catch (err) {
    process.stderr.write(`blackbox node_preload: fetch will not use the proxy: ${err && err.message}\n`);
  }
})();
