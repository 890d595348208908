export type Expr = {
    op: string;
    value?: number;
    name?: string;
    args?: Expr[];
};
export interface UniformField {
    name: string;
    type: "u32" | "i32" | "f32";
    offset: number;
    size: number;
    padding: boolean;
    value: Expr | null;
}
export interface BindingEntry {
    group: number;
    binding: number;
    name: string;
    kind: "uniform" | "storage";
    element: string | null;
    encoding: string | null;
    access: "read" | "read_write";
    scratch: boolean;
    count: Expr | null;
    min_binding_size: Expr;
}
export interface PassEntry {
    entry_point: string;
    workgroup_size: number[];
    workgroup_bytes: number;
    dispatch: Expr[];
}
export interface VariantEntry {
    kernel: string;
    name: string;
    params: Record<string, unknown>;
    files: Record<string, string>;
    sizes: string[];
    derived: {
        name: string;
        expr: Expr;
    }[];
    uniform: {
        struct: string;
        var: string;
        group: number;
        binding: number;
        size: number;
        fields: UniformField[];
    } | null;
    bindings: BindingEntry[];
    passes: PassEntry[];
    scratch: {
        binding: string;
        size: Expr;
    }[];
    features: string[];
    limits: Record<string, number>;
    preconditions: {
        text: string;
        expr: Expr;
    }[];
    portable: boolean;
    provenance_sha256: string;
    validated_by: string[];
    /** Values of the shader's `override`s (absent when none): every pass's pipeline gets them. */
    constants?: Record<string, number>;
    /** Sizes that are float parameters such as eps (absent when none); the others are integers. */
    float_sizes?: string[];
}
export interface Rule {
    label: string;
    match: Record<string, string | null>;
    shape: Record<string, {
        min: number | null;
        max: number | null;
    }>;
    chain: {
        variant: string;
        median_ns: number | null;
        samples: number | null;
        sha256: string | null;
    }[];
}
export interface Manifest {
    abi_version: string;
    generator: string;
    kernels: Record<string, {
        sizes: string[];
        variants: string[];
        selection: {
            rules: Rule[];
            default_chain: string[];
            portable_fallback: string;
        };
    }>;
    variants: Record<string, VariantEntry>;
}
export interface AdapterFacts {
    vendor: string;
    architecture: string;
    device: string;
    backend: string;
    features: ReadonlySet<string> | string[];
    limits: Record<string, number>;
}
export type Shape = Record<string, number>;
export interface Plan {
    kernel: string;
    variant: string;
    scope: Record<string, number>;
    dispatch: [string, [number, number, number]][];
    bufferSizes: Record<string, number>;
    scratchSizes: Record<string, number>;
    uniform: Uint8Array;
    rejected: [string, string][];
    constants: Record<string, number>;
    /** How each caller buffer holds its values (f32, f16, pf16: f16 pairs, u32, i32): the
     * selector may choose an f16 variant, whose buffers then hold f16 (2 bytes) values. */
    encodings: Record<string, string>;
}
export declare class NoViableError extends Error {
    kernel: string;
    shape: Shape;
    rejected: [string, string][];
    constructor(kernel: string, shape: Shape, rejected: [string, string][]);
}
/** A shape at which a variant cannot run at all (whyNot gives it as the one reason). */
export declare class UnrunnableError extends Error {
}
/** The value of an expression tree: integers and floats as Python computes them (`fdiv` is `/`,
 * `div` and `mod` floor as Python's `//` and `%`, `int` truncates toward zero). */
export declare function evaluate(t: Expr, scope: Record<string, number>): number;
/** Sizes (integers; float parameters such as eps may be any number) and derived values, in order. */
export declare function problemScope(v: VariantEntry, shape: Shape): Record<string, number>;
/** The uniform's bytes, little-endian on a DataView (padding zero). */
export declare function packUniform(v: VariantEntry, scope: Record<string, number>): Uint8Array;
/** f16 bits → number, by bit conversion (no Float16Array needed). */
export declare function f16ToNumber(h: number): number;
/** Every reason `v` cannot run on `facts` at `shape` (empty: it can). */
export declare function whyNot(v: VariantEntry, facts: AdapterFacts, shape: Shape): string[];
/** The chain to try: the first matching rule's, the default chain, the portable fallback. */
export declare function candidates(m: Manifest, kernel: string, facts: AdapterFacts, shape: Shape): string[];
/** The plan of one named variant at `shape` (no selection). */
export declare function planFor(m: Manifest, name: string, shape: Shape, rejected?: [string, string][]): Plan;
/** The first viable candidate's plan; NoViableError names why each candidate was dropped. */
export declare function selectWithFacts(m: Manifest, kernel: string, facts: AdapterFacts, shape: Shape): Plan;
/** AdapterFacts of a WebGPU adapter (adapter.info, adapter.features, adapter.limits). */
export declare function adapterFacts(adapter: GPUAdapter, limitNames: string[]): AdapterFacts;
/** The explicit bind group layout of a variant's group (its passes share it). */
export declare function bindGroupLayoutDescriptor(v: VariantEntry, group?: number): GPUBindGroupLayoutDescriptor;
/** Features and limits (above WebGPU's defaults) a device needs for `plan`: the variant's
 * own, and those its buffers' sizes need (a default device refuses a larger binding). */
export declare function requirements(m: Manifest, plan: Plan, defaults: Record<string, number>): {
    requiredFeatures: GPUFeatureName[];
    requiredLimits: Record<string, number>;
};
/** Bind the buffers (uniform/scratch made when absent) and encode every pass; the pipelines
 * are compiled on a device's first call for the variant and reused after. */
export declare function encodePlan(device: GPUDevice, encoder: GPUCommandEncoder, m: Manifest, wgsl: Record<string, string>, plan: Plan, buffers: Record<string, GPUBuffer>): void;
