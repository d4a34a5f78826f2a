/** A memo over a Map that holds at most `max` entries, forgetting the oldest insert first. */
export function cachedIn<K, V>(map: Map<K, V>, max: number, k: K, make: () => V): V {
  const hit = map.get(k);
  if (hit !== undefined) return hit;
  const v = make();
  if (map.size >= max) map.delete(map.keys().next().value as K);
  map.set(k, v);
  return v;
}
