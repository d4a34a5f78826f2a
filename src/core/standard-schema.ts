/** The Standard Schema v1 interface (zod, valibot, arktype implement it). Declared here, no dependency. */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly "~standard": {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>;
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}

export type StandardResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined }> };

export type InferOutput<S> = S extends StandardSchemaV1<unknown, infer O> ? O : never;

/** Validates with a Standard Schema; returns the value or a list of readable issues. */
export async function validateStandard<O>(schema: StandardSchemaV1<unknown, O>, value: unknown): Promise<{ ok: true; value: O } | { ok: false; issues: string[] }> {
  const r = await schema["~standard"].validate(value);
  if (r.issues) {
    return {
      ok: false,
      issues: r.issues.map((i) => {
        const path = (i.path ?? []).map((p) => (typeof p === "object" && p !== null && "key" in p ? String(p.key) : String(p))).join(".");
        return path ? `${path}: ${i.message}` : i.message;
      }),
    };
  }
  return { ok: true, value: r.value };
}
