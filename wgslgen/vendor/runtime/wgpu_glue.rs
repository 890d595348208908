//! wgpu glue for the vendored kernels (generated: do not edit). The only file that names wgpu
//! types: include it with `#[cfg(feature = "wgpu")] mod wgpu_glue;` next to `mod __PACKAGE__;`,
//! so a wgpu release can break this file, never the generated core.
//!
//! Which wgpu: written for the API of wgpu 25 to 29 as their changelogs and docs.rs describe
//! it, and never compiled against wgpu by wgslgen's tests (they have no crate registry). wgpu
//! 25 made `PipelineCompilationOptions::constants` a slice (24 and older take a HashMap: not
//! supported); 28 replaced `push_constant_ranges` by `immediate_size`, left to
//! `..Default::default()` here; 29 made `bind_group_layouts` a slice of `Option`, which the
//! `.into()` of each layout fits as it fits a plain reference. A later release may need edits.
//!
//! The device needs `plan.features` and `plan.required_limits`. Every entry of `plan.bindings`
//! needs a buffer in the bind groups: the caller's data (`plan.encodings` names them; bytes from
//! `encode`, sizes from `plan.buffer_sizes`, checked by `check_buffers`), the uniform (bytes:
//! `plan.uniform`), and each scratch binding, which the caller creates too: a storage buffer of
//! its `plan.scratch_sizes` bytes, contents uninitialised.
#![cfg(feature = "wgpu")]

use super::__PACKAGE__::Plan;

/// The bind group layout entries of the plan's bindings in `group` (the passes share them).
pub fn layout_entries(plan: &Plan, group: u32) -> Vec<wgpu::BindGroupLayoutEntry> {
    plan.bindings
        .iter()
        .filter(|b| b.group == group)
        .map(|b| wgpu::BindGroupLayoutEntry {
            binding: b.binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: match (b.kind, b.access) {
                    ("uniform", _) => wgpu::BufferBindingType::Uniform,
                    (_, "read") => wgpu::BufferBindingType::Storage { read_only: true },
                    _ => wgpu::BufferBindingType::Storage { read_only: false },
                },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        })
        .collect()
}

/// Create one pipeline per pass and encode every pass of `plan` into one compute pass;
/// `groups[i]` is @group(i)'s layout (of `layout_entries(plan, i)`) and bind group.
pub fn encode(
    device: &wgpu::Device,
    encoder: &mut wgpu::CommandEncoder,
    plan: &Plan,
    groups: &[(&wgpu::BindGroupLayout, &wgpu::BindGroup)],
) {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(plan.variant),
        source: wgpu::ShaderSource::Wgsl(plan.wgsl.into()),
    });
    let layouts: Vec<_> = groups.iter().map(|(layout, _)| (*layout).into()).collect();
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: None,
        bind_group_layouts: &layouts,
        ..Default::default()
    });
    let pipelines: Vec<_> = plan
        .dispatch
        .iter()
        .map(|(entry, _)| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(*entry),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(*entry),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: plan.constants,
                    ..Default::default()
                },
                cache: None,
            })
        })
        .collect();
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
    for (pipeline, (_, [x, y, z])) in pipelines.iter().zip(plan.dispatch.iter()) {
        pass.set_pipeline(pipeline);
        for (i, (_, bind_group)) in groups.iter().enumerate() {
            pass.set_bind_group(i as u32, *bind_group, &[]);
        }
        pass.dispatch_workgroups(*x, *y, *z);
    }
}
