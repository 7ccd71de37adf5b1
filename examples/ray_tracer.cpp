// A differentiable ray tracer: recover a point light's position from a rendered image.
//
//   ./build/examples/ray_tracer                 # 200 x 200, 1000 Adam steps
//   ./build/examples/ray_tracer --size 64 --steps 800
//
// Ordinary C++ on tensors, batched over pixels: a pinhole camera at the origin looking down +z
// casts one ray per pixel; every ray is intersected with three spheres (closed form) and with
// the triangles of a floor and a back wall (Moller-Trumbore), all pixels at once, and keeps the
// nearest hit's point, normal and albedo. Shading is Lambertian under a point light L of
// intensity 400: albedo (0.05 + 400 max(0, n . (L - p) / |L - p|) / |L - p|^2), no shadows.
// The geometry is fixed, so only shading depends on L; the target image is rendered with
// L = (5, 5, -10), and Adam (fx::optim, lr 0.05) fits L from (1, 2, -7) to it by the mean
// squared pixel difference, differentiated in reverse mode through the renderer. Writes
// ray_target.png, ray_initial.png and ray_final.png (8-bit grey, libpng) to the working
// directory, prints light_error= (distance of the fitted light from the true one) and ends
// with `ray_tracer: ok` when it is at most 0.1.
#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/optim.hpp>

#include "cli.hpp"

using fx::Tensor;

namespace {

Tensor vec3(double x, double y, double z) { return fx::tensor({x, y, z}, fx::f64); }
Tensor dot3(const Tensor& a, const Tensor& b) { return fx::sum(a * b, {-1}); }  // over xyz
Tensor cross(const Tensor& a, const Tensor& b) {  // (..., 3) x (..., 3), broadcasting
  auto c = [](const Tensor& t, int i) { return fx::select(t, -1, i); };
  return fx::stack({c(a, 1) * c(b, 2) - c(a, 2) * c(b, 1), c(a, 2) * c(b, 0) - c(a, 0) * c(b, 2),
                    c(a, 0) * c(b, 1) - c(a, 1) * c(b, 0)},
                   -1);
}
// Where every mask holds (bool tensors of one shape).
Tensor all_of(std::initializer_list<Tensor> masks) {
  Tensor acc;
  for (const Tensor& m : masks)
    acc = acc.defined() ? acc * fx::astype(m, fx::f64) : fx::astype(m, fx::f64);
  return acc > 0.5;
}
Tensor normalize(const Tensor& v) { return v / fx::unsqueeze(fx::sqrt(dot3(v, v)), -1); }

struct Sphere {
  double x, y, z, r, albedo;
};
struct Triangle {
  Tensor a, b, c;
  double albedo;
};

// The nearest hit of every ray: distance t (inf where none), normal and albedo.
struct Hits {
  Tensor t, point, normal, albedo, hit;
};

// Rays from the origin through a size x size image plane at z = 1 spanning [-1, 1]^2.
Tensor camera_rays(int64_t size) {
  Tensor coords = (fx::arange(0.5, double(size), 1.0, fx::f64) / double(size)) * 2.0 - 1.0;
  Tensor x = fx::expand(fx::unsqueeze(coords, 0), {size, size});
  Tensor y = fx::expand(fx::unsqueeze(-coords, 1), {size, size});  // row 0 at the top
  Tensor d = fx::stack({x, y, fx::ones({size, size}, fx::f64)}, -1);
  return normalize(fx::reshape(d, {size * size, 3}));
}

constexpr double kMiss = 1e30;

// Distance along unit rays d from the origin to a sphere, kMiss where it misses or is behind.
Tensor intersect(const Sphere& s, const Tensor& d) {
  Tensor oc = -vec3(s.x, s.y, s.z);  // origin - centre
  Tensor b = dot3(d, oc);
  const double c = fx::sum(oc * oc).item() - s.r * s.r;
  Tensor disc = b * b - c;
  Tensor t = -b - fx::sqrt(fx::relu(disc));
  return fx::where(all_of({disc > 0.0, t > 1e-6}), t, kMiss);
}

Tensor intersect(const Triangle& tri, const Tensor& d) {
  Tensor e1 = tri.b - tri.a, e2 = tri.c - tri.a, s = -tri.a;  // s = origin - a
  Tensor p = cross(d, e2);
  Tensor det = dot3(p, fx::expand(e1, d.shape()));
  Tensor inv = 1.0 / fx::where(fx::abs(det) > 1e-12, det, 1.0);
  Tensor u = dot3(p, fx::expand(s, d.shape())) * inv;
  Tensor q = cross(s, e1);
  Tensor v = dot3(d, fx::expand(q, d.shape())) * inv;
  Tensor t = fx::sum(e2 * q) * inv;
  Tensor inside = all_of({u >= 0.0, v >= 0.0, u + v <= 1.0, t > 1e-6, fx::abs(det) > 1e-12});
  return fx::where(inside, t, kMiss);
}

Hits trace(const Tensor& d, const std::vector<Sphere>& spheres,
           const std::vector<Triangle>& triangles) {
  const int64_t n = d.shape()[0];
  Hits h{fx::full({n}, kMiss, fx::f64), fx::zeros({n, 3}, fx::f64), fx::zeros({n, 3}, fx::f64),
         fx::zeros({n}, fx::f64), Tensor()};
  auto keep_nearer = [&](const Tensor& t, const Tensor& normal, double albedo) {
    Tensor nearer = t < h.t;
    h.t = fx::where(nearer, t, h.t);
    h.normal = fx::where(fx::unsqueeze(nearer, 1), normal, h.normal);
    h.albedo = fx::where(nearer, albedo, h.albedo);
  };
  for (const Sphere& s : spheres) {
    Tensor t = intersect(s, d);
    Tensor p = d * fx::unsqueeze(fx::minimum(t, fx::full({n}, 1e3, fx::f64)), 1);
    keep_nearer(t, normalize(p - vec3(s.x, s.y, s.z)), s.albedo);
  }
  for (const Triangle& tri : triangles) {
    Tensor nrm = normalize(cross(tri.b - tri.a, tri.c - tri.a));
    nrm = fx::where(fx::unsqueeze(dot3(d, fx::expand(nrm, d.shape())) > 0.0, 1), -nrm,
                    nrm);  // face the camera
    keep_nearer(intersect(tri, d), nrm, tri.albedo);
  }
  h.hit = h.t < kMiss;
  h.point = d * fx::unsqueeze(fx::where(h.hit, h.t, 0.0), 1);
  return h;
}

// Lambertian shading under a point light at `light` (3,): the differentiable part.
Tensor shade(const Hits& h, const Tensor& light) {
  Tensor to_light = light - h.point;
  Tensor dist2 = dot3(to_light, to_light);
  Tensor cosine = fx::relu(dot3(h.normal, to_light) / fx::sqrt(dist2));
  Tensor radiance = h.albedo * (0.05 + 400.0 * cosine / dist2);
  return fx::where(h.hit, radiance, 0.0);
}

void write_png(const std::string& path, const Tensor& image, int64_t size) {
  std::vector<double> v = fx::to_vector<double>(image);
  std::vector<png_byte> bytes(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    bytes[i] = png_byte(std::lround(255.0 * std::clamp(v[i], 0.0, 1.0)));
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  img.width = png_uint_32(size);
  img.height = png_uint_32(size);
  img.format = PNG_FORMAT_GRAY;
  if (!png_image_write_to_file(&img, path.c_str(), 0, bytes.data(), 0, nullptr))
    throw std::runtime_error("ray_tracer: libpng could not write " + path + ": " + img.message);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t size = 200, steps = 1000;
  fx::examples::Cli cli("ray_tracer",
                        "Renders a scene of spheres and triangles and recovers the light's "
                        "position from the image with Adam.");
  cli.option("--size", "N", "image width and height in pixels", size, {.min = 2});
  cli.option("--steps", "N", "Adam steps", steps, {.min = 0});
  cli.parse_or_exit(argc, argv);

  const std::vector<Sphere> spheres = {
      {0.0, -0.5, 6.0, 1.0, 0.9}, {1.9, 0.2, 8.0, 1.2, 0.7}, {-1.7, -0.7, 5.0, 0.8, 0.8}};
  auto tri = [](Tensor a, Tensor b, Tensor c, double albedo) { return Triangle{a, b, c, albedo}; };
  const std::vector<Triangle> triangles = {
      tri(vec3(-8, -1.5, 2), vec3(8, -1.5, 2), vec3(8, -1.5, 14), 0.6),  // floor
      tri(vec3(-8, -1.5, 2), vec3(8, -1.5, 14), vec3(-8, -1.5, 14), 0.6),
      tri(vec3(-8, -1.5, 14), vec3(8, -1.5, 14), vec3(0, 8, 14), 0.5)};  // back wall
  const Hits hits = trace(camera_rays(size), spheres, triangles);

  const Tensor true_light = vec3(5, 5, -10);
  const Tensor target = shade(hits, true_light);
  Tensor light = vec3(1, 2, -7);
  write_png("ray_target.png", fx::reshape(target, {size, size}), size);
  write_png("ray_initial.png", fx::reshape(shade(hits, light), {size, size}), size);

  auto opt = fx::optim::setup(fx::optim::Adam(0.05), light);
  for (int64_t step = 0; step < steps; ++step) {
    auto [loss, grad] = fx::withgradient(
        [&](const Tensor& l) { return fx::mean(fx::square(shade(hits, l) - target)); }, light);
    fx::optim::update(opt, light, grad);
    if (step % 50 == 0)
      std::printf("step %lld: loss %.3g light (%.3f, %.3f, %.3f)\n", static_cast<long long>(step),
                  loss.item(), fx::select(light, 0, 0).item(), fx::select(light, 0, 1).item(),
                  fx::select(light, 0, 2).item());
  }
  write_png("ray_final.png", fx::reshape(shade(hits, light), {size, size}), size);
  const double error = std::sqrt(fx::sum(fx::square(light - true_light)).item());
  std::printf("light=(%.4f, %.4f, %.4f)\nlight_error=%.4g\n", fx::select(light, 0, 0).item(),
              fx::select(light, 0, 1).item(), fx::select(light, 0, 2).item(), error);
  if (!(error <= 0.1)) return 1;
  std::printf("ray_tracer: ok\n");
  return 0;
}
