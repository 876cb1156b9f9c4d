// s3rver made as strict as AWS S3 where the S3 storage tests need it to be:
// it checks AWS Signature V4 on every signed request (s3rver 3.7 accepts any
// V4 signature) and honours If-Match / If-None-Match on PUT (s3rver ignores
// them), so a bad signature or a lost compare-and-swap fails as on AWS.
//
//   node s3rver_strict.js S3RVER_PACKAGE_DIR [s3rver's own arguments...]
//
// It wraps s3rver rather than patching its files: a first middleware does the
// two checks and the package's own command line does the rest.
'use strict';

const crypto = require('crypto');
const path = require('path');

const packageDir = path.resolve(process.argv[2]);
const S3rver = require(packageDir);
const S3Error = require(path.join(packageDir, 'lib/models/error'));

// s3rver's built-in account (lib/models/account.js).
const SECRETS = { S3RVER: 'S3RVER' };

const sha256Hex = (data) => crypto.createHash('sha256').update(data).digest('hex');
const hmac = (key, data) => crypto.createHmac('sha256', key).update(data).digest();

// RFC 3986 encoding as SigV4 defines it: everything but A-Z a-z 0-9 - _ . ~.
const encode = (s) =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
// No '+' for space: SigV4 clients send %20, and '+' in an S3 key is a plus.
const decode = (s) => decodeURIComponent(s);

function canonicalUri(rawPath) {
  return rawPath.split('/').map((segment) => encode(decode(segment))).join('/') || '/';
}

function canonicalQuery(rawQuery) {
  if (!rawQuery) return '';
  return rawQuery
    .split('&')
    .filter((pair) => pair.length > 0)
    .map((pair) => {
      const eq = pair.indexOf('=');
      const key = eq < 0 ? pair : pair.slice(0, eq);
      const value = eq < 0 ? '' : pair.slice(eq + 1);
      return [encode(decode(key)), encode(decode(value))];
    })
    .sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1))
    .map(([key, value]) => `${key}=${value}`)
    .join('&');
}

// Throws SignatureDoesNotMatch unless the request's V4 signature is the one
// its secret key gives. Requests without a V4 Authorization header are left
// to s3rver (which rejects unknown access keys and anonymous writes itself).
function checkSignature(req) {
  const auth = req.headers.authorization || '';
  if (!auth.startsWith('AWS4-HMAC-SHA256 ')) return;
  const fields = {};
  for (const part of auth.slice('AWS4-HMAC-SHA256 '.length).split(',')) {
    const eq = part.indexOf('=');
    fields[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  const [accessKey, date, region, service, terminator] = (fields.Credential || '').split('/');
  const secret = SECRETS[accessKey];
  if (secret === undefined) return;  // s3rver answers InvalidAccessKeyId
  const amzDate = req.headers['x-amz-date'] || '';
  const payloadHash = req.headers['x-amz-content-sha256'] || '';
  const signedHeaders = (fields.SignedHeaders || '').split(';');
  const question = req.url.indexOf('?');
  const rawPath = question < 0 ? req.url : req.url.slice(0, question);
  const rawQuery = question < 0 ? '' : req.url.slice(question + 1);
  const canonicalRequest = [
    req.method,
    canonicalUri(rawPath),
    canonicalQuery(rawQuery),
    signedHeaders
      .map((name) => `${name}:${String(req.headers[name] || '').trim().replace(/\s+/g, ' ')}\n`)
      .join(''),
    fields.SignedHeaders || '',
    payloadHash,
  ].join('\n');
  const scope = `${date}/${region}/${service}/${terminator}`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonicalRequest)].join('\n');
  let key = hmac('AWS4' + secret, date);
  for (const part of [region, service, terminator]) key = hmac(key, part);
  const expected = hmac(key, stringToSign).toString('hex');
  const ok =
    terminator === 'aws4_request' &&
    signedHeaders.includes('host') &&
    amzDate.startsWith(date) &&
    fields.Signature === expected;
  if (!ok) {
    throw new S3Error(
      'SignatureDoesNotMatch',
      'The request signature we calculated does not match the signature you provided. ' +
        'Check your key and signing method.',
      { AWSAccessKeyId: accessKey, CanonicalRequest: canonicalRequest, StringToSign: stringToSign },
    );
  }
}

// Conditional PUTs of one key run one at a time, so the check of the current
// ETag and the write that follows it are one step, as on S3.
const keyLocks = new Map();

async function withKeyLock(key, fn) {
  const before = keyLocks.get(key) || Promise.resolve();
  let release;
  const mine = new Promise((resolve) => (release = resolve));
  const chained = before.then(() => mine);
  keyLocks.set(key, chained);
  await before;
  try {
    return await fn();
  } finally {
    release();
    if (keyLocks.get(key) === chained) keyLocks.delete(key);
  }
}

async function checkPrecondition(ctx) {
  const ifMatch = ctx.get('if-match');
  const ifNoneMatch = ctx.get('if-none-match');
  const [bucket, ...keyParts] = ctx.path.split('/').slice(1);
  const key = decodeURIComponent(keyParts.join('/'));
  let etag = null;
  try {
    etag = (await ctx.app.store.getMetadata(bucket, key)).etag;
  } catch (err) {
    if (err.code !== 'ENOENT') throw err;
  }
  const failed = (ifNoneMatch === '*' && etag !== null) || (ifMatch && ifMatch !== etag);
  if (failed) {
    throw new S3Error('PreconditionFailed', 'At least one of the pre-conditions you specified did not hold', {
      Condition: ifMatch ? 'If-Match' : 'If-None-Match',
    });
  }
}

const strict = async (ctx, next) => {
  checkSignature(ctx.req);
  const conditional = ctx.method === 'PUT' && (ctx.get('if-match') || ctx.get('if-none-match'));
  if (!conditional) return next();
  return withKeyLock(ctx.path, async () => {
    await checkPrecondition(ctx);
    await next();
  });
};

// s3rver adds its middleware in its constructor; ours goes first when the
// server builds its request handler.
const koaCallback = S3rver.prototype.callback;
S3rver.prototype.callback = function callback() {
  this.middleware.unshift(strict);
  return koaCallback.call(this);
};

process.argv = [process.argv[0], path.join(packageDir, 'bin/s3rver.js'), ...process.argv.slice(3)];
require(path.join(packageDir, 'bin/s3rver.js'));
