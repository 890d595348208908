//! wgpu glue for the vendored kernels (generated: do not edit). The only file that names wgpu
//! types: include it with `#[cfg(feature = "wgpu")] mod wgpu_glue;` next to `mod __PACKAGE__;`,
//! so a wgpu release can break this file, never the generated core. Written against wgpu 25+;
//! not compiled by wgslgen's tests (no crate registry there).
#![cfg(feature = "wgpu")]

use super::__PACKAGE__::Plan;

/// One bind group layout entry per binding of the plan's variant (the passes share it).
pub fn layout_entries(kinds: &[(u32, &str)]) -> Vec<wgpu::BindGroupLayoutEntry> {
    kinds
        .iter()
        .map(|(binding, kind)| wgpu::BindGroupLayoutEntry {
            binding: *binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: match *kind {
                    "uniform" => wgpu::BufferBindingType::Uniform,
                    "read" => wgpu::BufferBindingType::Storage { read_only: true },
                    _ => wgpu::BufferBindingType::Storage { read_only: false },
                },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        })
        .collect()
}

/// Create one pipeline per pass and encode every pass of `plan` into one compute pass.
pub fn encode(
    device: &wgpu::Device,
    encoder: &mut wgpu::CommandEncoder,
    plan: &Plan,
    layout: &wgpu::BindGroupLayout,
    bind_group: &wgpu::BindGroup,
) {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(plan.variant),
        source: wgpu::ShaderSource::Wgsl(plan.wgsl.into()),
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: None,
        bind_group_layouts: &[layout],
        push_constant_ranges: &[],
    });
    let pipelines: Vec<_> = plan
        .dispatch
        .iter()
        .map(|(entry, _)| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(entry),
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
        pass.set_bind_group(0, bind_group, &[]);
        pass.dispatch_workgroups(*x, *y, *z);
    }
}
