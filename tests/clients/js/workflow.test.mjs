// The reference workflow with the official JavaScript client (@elastic/elasticsearch 8.x,
// pinned in package.json): create an index with a mapping, bulk-load with helpers.bulk,
// search with aggregations, scroll with helpers.scrollSearch / scrollDocuments, update,
// delete, and the client's errors. Expected answers come from the oracle below, computed
// from the documents this file generates, never from Lode's answers.
// Run by scripts/test-clients.sh with LODE_URL set to a running `lode serve`.

import { test, before, after, beforeEach } from 'node:test'
import assert from 'node:assert/strict'
import { Client, errors } from '@elastic/elasticsearch'

const URL = process.env.LODE_URL
if (!URL) throw new Error('LODE_URL is not set: run scripts/test-clients.sh')

const INDEX = 'clients-js'
const N_DOCS = 600
const TAGS = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta']
const WORDS = ['quick', 'brown', 'fox', 'lazy', 'dog', 'river', 'stone', 'cloud', 'amber', 'north']
const QTY_MIN = 20
const MAPPING = {
  properties: {
    title: { type: 'text' },
    tag: { type: 'keyword' },
    qty: { type: 'integer' },
    price: { type: 'double' },
    ts: { type: 'date' }
  }
}

// A small seeded generator (mulberry32), so every run indexes the same documents.
function rng (seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function generate (seed) {
  const r = rng(seed)
  const int = (n) => Math.floor(r() * n)
  const start = Date.UTC(2024, 0, 1)
  const docs = []
  for (let i = 0; i < N_DOCS; i++) {
    // the smaller of two draws: earlier tags are more likely, so bucket counts differ
    const tag = TAGS[Math.min(int(TAGS.length), int(TAGS.length))]
    const ts = new Date(start + int(366 * 86400) * 1000).toISOString().replace('.000Z', 'Z')
    docs.push({
      id: 'j' + String(i).padStart(4, '0'),
      source: {
        title: Array.from({ length: 4 }, () => WORDS[int(WORDS.length)]).join(' '),
        tag,
        qty: int(50),
        price: (100 + int(99900)) / 100,
        ts
      }
    })
  }
  return docs
}

function monthStart (ts) {
  const d = new Date(ts)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
}

function nextMonth (ms) {
  const d = new Date(ms)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
}

const AGGS_REQUEST = {
  query: { range: { qty: { gte: QTY_MIN } } },
  size: 0,
  track_total_hits: true,
  aggs: {
    tags: { terms: { field: 'tag', size: 10 }, aggs: { qty_sum: { sum: { field: 'qty' } } } },
    per_month: { date_histogram: { field: 'ts', calendar_interval: 'month' } },
    qty_sum: { sum: { field: 'qty' } },
    price_max: { max: { field: 'price' } }
  }
}

// The oracle of AGGS_REQUEST over [{id, source}].
function expectedAggs (docs) {
  const matched = docs.map((d) => d.source).filter((s) => s.qty >= QTY_MIN)
  const perTag = new Map()
  for (const s of matched) {
    const [c, q] = perTag.get(s.tag) ?? [0, 0]
    perTag.set(s.tag, [c + 1, q + s.qty])
  }
  const tags = [...perTag.entries()]
    .sort((x, y) => (y[1][0] - x[1][0]) || (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0))
    .slice(0, 10)
    .map(([key, [count, sum]]) => ({ key, doc_count: count, qty_sum: sum }))
  const months = new Map()
  for (const s of matched) months.set(monthStart(s.ts), (months.get(monthStart(s.ts)) ?? 0) + 1)
  const buckets = []
  if (months.size) {
    const last = Math.max(...months.keys())
    for (let m = Math.min(...months.keys()); m <= last; m = nextMonth(m)) {
      buckets.push({ key_as_string: new Date(m).toISOString(), key: m, doc_count: months.get(m) ?? 0 })
    }
  }
  return {
    total: matched.length,
    tags,
    months: buckets,
    qtySum: matched.reduce((a, s) => a + s.qty, 0),
    priceMax: Math.max(...matched.map((s) => s.price))
  }
}

function checkAggs (resp, docs) {
  const exp = expectedAggs(docs)
  assert.deepEqual(resp.hits.total, { value: exp.total, relation: 'eq' })
  assert.deepEqual(resp.hits.hits, [])
  const aggs = resp.aggregations
  assert.deepEqual(
    aggs.tags.buckets.map((b) => ({ key: b.key, doc_count: b.doc_count, qty_sum: b.qty_sum.value })),
    exp.tags
  )
  assert.equal(aggs.tags.sum_other_doc_count, 0)
  assert.deepEqual(
    aggs.per_month.buckets.map((b) => ({ key_as_string: b.key_as_string, key: b.key, doc_count: b.doc_count })),
    exp.months
  )
  assert.equal(aggs.qty_sum.value, exp.qtySum)
  assert.equal(aggs.price_max.value, exp.priceMax)
}

const client = new Client({ node: URL, maxRetries: 0, requestTimeout: 60000 })
const DOCS = generate(12)

async function load () {
  await client.indices.delete({ index: INDEX }, { ignore: [404] })
  const created = await client.indices.create({
    index: INDEX,
    settings: { number_of_shards: 2 },
    mappings: MAPPING
  })
  assert.deepEqual(created, { acknowledged: true, shards_acknowledged: true, index: INDEX })
  const ids = new WeakMap(DOCS.map((d) => [d.source, d.id]))
  const dropped = []
  const stats = await client.helpers.bulk({
    datasource: DOCS.map((d) => d.source),
    onDocument: (source) => ({ index: { _index: INDEX, _id: ids.get(source) } }),
    onDrop: (d) => dropped.push(d),
    flushBytes: 16 * 1024,
    refreshOnCompletion: INDEX
  })
  assert.deepEqual(dropped, [])
  assert.equal(stats.total, DOCS.length)
  assert.equal(stats.successful, DOCS.length)
  assert.equal(stats.failed, 0)
}

before(async () => {
  const info = await client.info()
  assert.equal(info.tagline, 'You Know, for Search')
})
beforeEach(load)
after(async () => {
  await client.indices.delete({ index: INDEX }, { ignore: [404] })
  await client.close()
})

test('mapping and count', async () => {
  assert.deepEqual(await client.indices.getMapping({ index: INDEX }), { [INDEX]: { mappings: MAPPING } })
  assert.equal((await client.count({ index: INDEX })).count, DOCS.length)
})

test('search with terms, date_histogram and metric aggregations', async () => {
  checkAggs(await client.search({ index: INDEX, ...AGGS_REQUEST }), DOCS)
})

test('search hits sorted by a field', async () => {
  const resp = await client.search({
    index: INDEX,
    query: { term: { tag: 'delta' } },
    sort: [{ price: 'asc' }, { qty: 'desc' }],
    size: 12
  })
  const exp = DOCS.filter((d) => d.source.tag === 'delta')
    .sort((x, y) => (x.source.price - y.source.price) || (y.source.qty - x.source.qty))
  assert.deepEqual(resp.hits.total, { value: exp.length, relation: 'eq' })
  assert.deepEqual(resp.hits.hits.map((h) => h.sort), exp.slice(0, 12).map((d) => [d.source.price, d.source.qty]))
  const byId = new Map(DOCS.map((d) => [d.id, d.source]))
  for (const h of resp.hits.hits) assert.deepEqual(h._source, byId.get(h._id))
})

test('scroll helpers read every document once', async () => {
  const seen = new Map()
  let pages = 0
  for await (const result of client.helpers.scrollSearch({ index: INDEX, query: { match_all: {} }, size: 41 })) {
    pages++
    for (const hit of result.body.hits.hits) {
      assert.ok(!seen.has(hit._id), `duplicate ${hit._id}`)
      seen.set(hit._id, hit._source)
    }
  }
  assert.equal(pages, Math.ceil(DOCS.length / 41))
  assert.deepEqual(seen, new Map(DOCS.map((d) => [d.id, d.source])))
  let n = 0
  for await (const source of client.helpers.scrollDocuments({ index: INDEX, query: { range: { qty: { lt: 10 } } }, size: 13 })) {
    assert.ok(source.qty < 10)
    n++
  }
  assert.equal(n, DOCS.filter((d) => d.source.qty < 10).length)
})

test('point in time is refused with a 400', async () => {
  // Lode does not implement point in time: ES's 400 error, never a silent no-op
  await assert.rejects(client.openPointInTime({ index: INDEX, keep_alive: '1m' }), (err) => {
    assert.ok(err instanceof errors.ResponseError)
    assert.equal(err.meta.statusCode, 400)
    assert.equal(err.body.error.type, 'illegal_argument_exception')
    return true
  })
  await assert.rejects(client.search({ pit: { id: 'anything', keep_alive: '1m' }, size: 1 }), (err) => {
    assert.equal(err.meta.statusCode, 400)
    assert.equal(err.body.error.type, 'parsing_exception')
    return true
  })
})

test('update a document', async () => {
  const { id, source } = DOCS[5]
  const resp = await client.update({ index: INDEX, id, doc: { qty: source.qty + 700, tag: 'updated' }, refresh: true })
  assert.equal(resp.result, 'updated')
  assert.equal(resp._version, 2)
  const got = await client.get({ index: INDEX, id })
  const updated = { ...source, qty: source.qty + 700, tag: 'updated' }
  assert.deepEqual(got._source, updated)
  checkAggs(await client.search({ index: INDEX, ...AGGS_REQUEST }),
    DOCS.map((d) => (d.id === id ? { id, source: updated } : d)))
  await assert.rejects(client.update({ index: INDEX, id: 'missing', doc: { qty: 1 } }), (err) => {
    assert.equal(err.meta.statusCode, 404)
    assert.equal(err.body.error.type, 'document_missing_exception')
    return true
  })
})

test('delete a document', async () => {
  const { id } = DOCS[6]
  const resp = await client.delete({ index: INDEX, id, refresh: true })
  assert.equal(resp.result, 'deleted')
  await assert.rejects(client.get({ index: INDEX, id }), (err) => {
    assert.ok(err instanceof errors.ResponseError)
    assert.equal(err.meta.statusCode, 404)
    assert.deepEqual(err.body, { _index: INDEX, _id: id, found: false })
    return true
  })
  assert.equal((await client.count({ index: INDEX })).count, DOCS.length - 1)
  checkAggs(await client.search({ index: INDEX, ...AGGS_REQUEST }), DOCS.filter((d) => d.id !== id))
})

test('index not found is a 404 index_not_found_exception', async () => {
  await assert.rejects(client.search({ index: 'clients-js-missing', query: { match_all: {} } }), (err) => {
    assert.ok(err instanceof errors.ResponseError)
    assert.equal(err.meta.statusCode, 404)
    assert.equal(err.body.error.type, 'index_not_found_exception')
    assert.equal(err.body.error.index, 'clients-js-missing')
    return true
  })
  assert.equal(await client.indices.exists({ index: 'clients-js-missing' }), false)
})

test('a bad query is a 400 parsing_exception', async () => {
  await assert.rejects(client.search({ index: INDEX, query: { no_such_query: { tag: 'beta' } } }), (err) => {
    assert.ok(err instanceof errors.ResponseError)
    assert.equal(err.meta.statusCode, 400)
    assert.equal(err.body.error.type, 'parsing_exception')
    assert.equal(err.body.error.reason, 'unknown query [no_such_query]')
    return true
  })
})
