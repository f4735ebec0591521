// npm install standardwebhooks
const { Webhook } = require("standardwebhooks");

// secret: the webhook's "whsec_..." secret; rawBody: the request body exactly as received
// (a string or Buffer, before any JSON parsing); headers: the request's headers.
// Throws if the signature or the timestamp (more than 5 minutes off) is wrong; returns the
// parsed payload otherwise. During a secret rotation either secret verifies.
function verify(secret, rawBody, headers) {
  return new Webhook(secret).verify(rawBody, headers);
}

module.exports = { verify };
