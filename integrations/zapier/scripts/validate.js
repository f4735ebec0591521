'use strict';

// Validates the app definition the way `zapier validate` does before a push: the app's own
// handler serializes it (`definition`) and `zapier-platform-schema` checks it, with the
// functional constraints. Exits 1 with the errors when there are any.

const zapier = require('zapier-platform-core');
const { validateAppDefinition } = require('zapier-platform-schema');

/** What the app's handler answers to a command (`definition`, `validate`). */
const run = (command) =>
  new Promise((resolve, reject) => {
    const handler = zapier.createAppHandler(require('../index'));
    handler({ command, bundle: {}, calledFromCli: true }, {}, (err, response) =>
      err ? reject(err) : resolve(response.results),
    );
  });

const problems = async () => {
  const definition = await run('definition');
  const errors = validateAppDefinition(definition).errors.map(
    (e) => `${e.property}: ${e.message}`,
  );
  const fromCore = (await run('validate')).map((e) => `${e.property}: ${e.message}`);
  return { definition, errors: [...new Set([...errors, ...fromCore])] };
};

module.exports = { problems };

if (require.main === module) {
  problems().then(
    ({ definition, errors }) => {
      if (errors.length > 0) {
        errors.forEach((e) => console.error(e));
        process.exit(1);
      }
      const count = (kind) => Object.keys(definition[kind] || {}).length;
      console.log(
        `The app definition is valid: ${count('triggers')} triggers, ${count('searches')} searches, ${count('creates')} creates.`,
      );
    },
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
