// LetheDB's server-side JavaScript API: what stored procedures and triggers call.
//
// Evaluated once per execution, before the script. It defines the globals real scripts use
// (getContext, __, console, ErrorCodes, the two-argument Error) and returns the functions the
// Rust driver (run.rs) calls: `start` with the execution's facts, `take` for the collection
// operations the script queued, `settle` to answer one of them (running its callback), and
// `finish` for what the execution produced.
//
// Collection operations never run inside the call that queues them: they are queued, and the
// driver answers them after the current turn, so a callback chain of thousands of operations
// never deepens the stack.
(function (global, host) {
  'use strict';

  const NativeError = global.Error;
  // The service's two-argument form: new Error(409, "message") sets err.number.
  function CosmosError(first, second) {
    if (!new.target) {
      return new CosmosError(...arguments);
    }
    let error;
    if (typeof first === 'number' && arguments.length >= 2) {
      error = new NativeError(second === undefined ? '' : String(second));
      error.number = first;
    } else {
      error = new NativeError(...arguments);
    }
    Object.setPrototypeOf(error, new.target.prototype);
    return error;
  }
  CosmosError.prototype = NativeError.prototype;
  Object.defineProperty(NativeError.prototype, 'constructor', {
    value: CosmosError, writable: true, configurable: true,
  });
  Object.defineProperty(CosmosError, 'name', { value: 'Error' });
  global.Error = CosmosError;

  const ErrorCodes = Object.freeze({
    BadRequest: 400,
    Forbidden: 403,
    NotFound: 404,
    Conflict: 409,
    PreconditionFailed: 412,
    RequestEntityTooLarge: 413,
    RetryWith: 449,
    InternalServerError: 500,
  });
  global.ErrorCodes = ErrorCodes;

  // Marks the exception `abort()` throws, so the driver can tell it from a script's own.
  const ABORT = Symbol('abort');

  let facts = null;
  // Whether a post-trigger replaced the response body.
  let responseSet = false;
  let requestProperties = null;
  let responseProperties = null;
  const logs = [];
  const queued = [];
  const callbacks = new Map();
  let nextOperation = 1;

  // --- console -------------------------------------------------------------------------
  function format(args) {
    if (args.length === 0) return '';
    let text = String(args[0]);
    let next = 1;
    text = text.replace(/%[s%]/g, (match) => {
      if (match === '%%') return '%';
      return next < args.length ? String(args[next++]) : match;
    });
    for (; next < args.length; next++) text += ' ' + String(args[next]);
    return text;
  }
  global.console = Object.freeze({
    log: function () {
      if (facts && facts.logging) logs.push(format(Array.prototype.slice.call(arguments)));
    },
  });

  // --- request and response ------------------------------------------------------------
  // A property map: getX/setX/appendX for each property, and the generic getValue/setValue/
  // appendValue. Only existing properties may be set, and only writable ones.
  function propertyMap(properties, writable, extras, onChange) {
    const map = {};
    const check = (name) => {
      if (!Object.prototype.hasOwnProperty.call(properties, name)) {
        throw new CosmosError(ErrorCodes.BadRequest, 'Cannot set new values: ' + name);
      }
      if (!writable.includes(name)) {
        throw new CosmosError(ErrorCodes.Forbidden, 'Not a writable property: ' + name);
      }
    };
    map.getValue = (name) => properties[name];
    map.setValue = (name, value) => {
      check(name);
      properties[name] = value;
      if (onChange) onChange(name);
    };
    map.appendValue = (name, value) => {
      check(name);
      const current = properties[name];
      properties[name] = (current === undefined || current === null ? '' : current) + value;
      if (onChange) onChange(name);
    };
    for (const name of Object.keys(properties)) {
      map['get' + name] = () => map.getValue(name);
      if (writable.includes(name)) {
        map['set' + name] = (value) => map.setValue(name, value);
        map['append' + name] = (value) => map.appendValue(name, value);
      }
    }
    return Object.assign(map, extras);
  }

  // --- the collection ------------------------------------------------------------------
  function queue(kind, args, callback, feed) {
    if (callback !== undefined && typeof callback !== 'function') {
      throw new CosmosError(ErrorCodes.BadRequest, 'The callback must be a function.');
    }
    if (!host.accepting()) return false;
    const id = nextOperation++;
    queued.push({ id: id, kind: kind, args: args });
    callbacks.set(id, { callback: callback, feed: feed });
    return true;
  }

  // Optional trailing options and callback, in either of the positions scripts use. Options
  // that are not an object are refused at the call, as the service does.
  function optionsAndCallback(options, callback) {
    if (typeof options === 'function') return [{}, options];
    if (options !== undefined && options !== null && typeof options !== 'object') {
      throw new CosmosError(ErrorCodes.BadRequest, 'The options must be an object.');
    }
    return [options || {}, callback];
  }

  const trimmed = (link) => link.replace(/^\/+|\/+$/g, '');

  // A link must name this collection (by rid or by name), or a document in it; anything else
  // throws at the call, before anything is queued.
  function requireLink(link, what) {
    if (typeof link !== 'string' || link.length === 0) {
      throw new CosmosError(ErrorCodes.BadRequest, 'The ' + what + ' link must be a non-empty string.');
    }
    const own = [trimmed(facts.selfLink), trimmed(facts.altLink)];
    const given = trimmed(link);
    const inside = what === 'collection'
      ? own.includes(given)
      : own.some((collection) => given.startsWith(collection + '/docs/') && given.length > collection.length + 6);
    if (!inside) {
      throw new CosmosError(ErrorCodes.BadRequest,
        'Function is not allowed to operate on resources outside current collection. Make sure that the link provided, "' +
        link + '", belongs to current collection.');
    }
    return link;
  }

  function requireBody(body) {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new CosmosError(ErrorCodes.BadRequest, 'The document body must be an object.');
    }
    return body;
  }

  const collection = {
    getSelfLink: () => facts.selfLink,
    getAltLink: () => facts.altLink,
    createDocument(link, body, options, callback) {
      [options, callback] = optionsAndCallback(options, callback);
      return queue('create', { link: requireLink(link, 'collection'), body: requireBody(body), options: options }, callback, false);
    },
    upsertDocument(link, body, options, callback) {
      [options, callback] = optionsAndCallback(options, callback);
      return queue('upsert', { link: requireLink(link, 'collection'), body: requireBody(body), options: options }, callback, false);
    },
    replaceDocument(link, body, options, callback) {
      [options, callback] = optionsAndCallback(options, callback);
      return queue('replace', { link: requireLink(link, 'document'), body: requireBody(body), options: options }, callback, false);
    },
    deleteDocument(link, options, callback) {
      [options, callback] = optionsAndCallback(options, callback);
      return queue('delete', { link: requireLink(link, 'document'), options: options }, callback, 'options');
    },
    readDocument(link, options, callback) {
      [options, callback] = optionsAndCallback(options, callback);
      return queue('read', { link: requireLink(link, 'document'), options: options }, callback, false);
    },
    readDocuments(link, options, callback) {
      [options, callback] = optionsAndCallback(options, callback);
      return queue('readFeed', { link: requireLink(link, 'collection'), options: options }, callback, true);
    },
    queryDocuments(link, query, options, callback) {
      [options, callback] = optionsAndCallback(options, callback);
      if (typeof query !== 'string' && (query === null || typeof query !== 'object' || typeof query.query !== 'string')) {
        throw new CosmosError(ErrorCodes.BadRequest, 'The query must be a SQL string or a {query, parameters} object.');
      }
      return queue('query', { link: requireLink(link, 'collection'), query: query, options: options }, callback, true);
    },
  };

  // --- the __ chain API ----------------------------------------------------------------
  // Each step runs over one page of the partition's documents; `value` (or a single step
  // called with a callback) hands the result to the callback with the page's continuation,
  // and without a callback appends the result to the response body.
  function runSteps(steps, options, callback) {
    [options, callback] = optionsAndCallback(options, callback);
    const accepted = queue('readFeed', { link: facts.selfLink, options: options }, function (error, documents, responseOptions) {
      if (error) {
        if (callback) return callback(error, undefined, responseOptions);
        throw error;
      }
      let result = documents;
      for (const step of steps) result = step(result);
      if (callback) return callback(undefined, result, responseOptions);
      response.appendBody(JSON.stringify(result));
    }, true);
    return { isAccepted: accepted };
  }

  function keyed(order) {
    return (selector) => (documents) => documents
      .map((document, index) => ({ key: selector(document), index: index, document: document }))
      .sort((a, b) => {
        if (a.key < b.key) return -order;
        if (a.key > b.key) return order;
        return a.index - b.index;
      })
      .map((entry) => entry.document);
  }
  const stepMakers = {
    filter: (predicate) => (documents) => documents.filter((document) => predicate.call(null, document)),
    map: (mapper) => (documents) => documents.map((document) => mapper.call(null, document)),
    pluck: (name) => (documents) => documents.map((document) => (document === null || document === undefined ? undefined : document[name])),
    flatten: (shallow) => (documents) => (shallow ? documents.flat(1) : documents.flat(Infinity)),
    sortBy: keyed(1),
    sortByDescending: keyed(-1),
    unwind: (collectionSelector, resultSelector) => (documents) => {
      const out = [];
      for (const document of documents) {
        const inner = collectionSelector(document);
        if (!Array.isArray(inner)) continue;
        for (const item of inner) out.push(resultSelector ? resultSelector(document, item) : { document: document, item: item });
      }
      return out;
    },
  };

  function chain() {
    const steps = [];
    const builder = {
      value: (options, callback) => runSteps(steps, options, callback),
    };
    for (const name of Object.keys(stepMakers)) {
      builder[name] = function () {
        steps.push(stepMakers[name].apply(null, arguments));
        return builder;
      };
    }
    return builder;
  }

  const underscore = Object.create(collection);
  underscore.chain = chain;
  for (const name of Object.keys(stepMakers)) {
    // A lone step: its arguments, then optional options and callback.
    const arity = { filter: 1, map: 1, pluck: 1, flatten: 1, sortBy: 1, sortByDescending: 1, unwind: 2 }[name];
    underscore[name] = function () {
      const args = Array.prototype.slice.call(arguments);
      const own = args.slice(0, arity);
      const rest = args.slice(arity);
      return runSteps([stepMakers[name].apply(null, own)], rest[0], rest[1]);
    };
  }

  let request = null;
  let response = null;
  const context = {
    getCollection: () => collection,
    getRequest: () => request,
    abort: (error) => {
      const marker = error instanceof NativeError ? error : new CosmosError(ErrorCodes.BadRequest, error === undefined ? 'The script called abort().' : String(error));
      marker[ABORT] = true;
      throw marker;
    },
  };
  global.getContext = () => context;
  global.__ = underscore;

  // --- what the driver calls -----------------------------------------------------------
  function describe(error) {
    if (error instanceof NativeError) {
      return {
        number: typeof error.number === 'number' ? error.number : null,
        name: error.name || 'Error',
        message: error.message === undefined ? '' : String(error.message),
        stack: error.stack ? String(error.stack) : '',
        aborted: error[ABORT] === true,
      };
    }
    let text;
    try {
      text = typeof error === 'string' ? error : JSON.stringify(error);
    } catch (e) {
      text = String(error);
    }
    return { number: null, name: '', message: text === undefined ? String(error) : text, stack: '', aborted: false };
  }

  return {
    // The execution's facts: links, logging, the kind and the request (and, for a
    // post-trigger, the response) body.
    start(factsJson) {
      facts = JSON.parse(factsJson);
      requestProperties = { Body: facts.requestBody };
      request = propertyMap(requestProperties, facts.kind === 'post' ? [] : ['Body'], {
        getOperationType: () => facts.operationType,
      });
      if (facts.kind !== 'pre') {
        responseProperties = { Body: facts.kind === 'post' ? facts.responseBody : '' };
        response = propertyMap(responseProperties, ['Body'], {
          getMaxResourceQuota: () => '',
          getResourceQuotaCurrentUsage: () => '',
        }, () => { responseSet = true; });
        context.getResponse = () => response;
      }
      underscore.request = request;
      underscore.response = response;
    },
    // Runs the script with its arguments (a JSON array).
    invoke(script, argsJson) {
      if (typeof script !== 'function') {
        throw new CosmosError(ErrorCodes.BadRequest, 'The script body must be a function.');
      }
      return script.apply(null, JSON.parse(argsJson));
    },
    take() {
      if (queued.length === 0) return '';
      const taken = JSON.stringify(queued);
      queued.length = 0;
      return taken;
    },
    // Answers operation `id`: `outcomeJson` is {error: {number, message, body}} or
    // {resource, feed, options}. Without a callback an error is thrown, as the service does.
    settle(id, outcomeJson) {
      const entry = callbacks.get(id);
      callbacks.delete(id);
      const outcome = JSON.parse(outcomeJson);
      const options = outcome.options || {};
      if (outcome.error) {
        const error = new CosmosError(outcome.error.number, outcome.error.message);
        error.body = outcome.error.body;
        if (entry.callback) return entry.callback.call(null, error, undefined, options);
        throw error;
      }
      if (entry.callback) {
        if (entry.feed === 'options') return entry.callback.call(null, undefined, options);
        return entry.callback.call(null, undefined, entry.feed ? outcome.feed : outcome.resource, options);
      }
    },
    describe: describe,
    finish() {
      let body = '';
      if (responseProperties) {
        body = responseProperties.Body === undefined ? '' : responseProperties.Body;
      }
      return JSON.stringify({
        body: JSON.stringify(body === undefined ? null : body),
        requestBody: JSON.stringify(requestProperties.Body === undefined ? null : requestProperties.Body),
        log: logs.join(''),
        responseSet: responseSet,
      });
    },
  };
})
