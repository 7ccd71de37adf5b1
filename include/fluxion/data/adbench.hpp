// Readers for Microsoft ADBench's input files (Šrajer, Kukelova, Fitzgibbon, arXiv:1807.10129),
// the problems AD tools are compared on: the Gaussian mixture model (GMM), bundle adjustment
// (BA) and hand tracking.
//
//   fx::data::GmmInput g = fx::data::read_gmm("/work/shared/adbench/gmm/1k/gmm_d10_K25.txt");
//   const int c = 0, j = 1, i = 2;
//   g.d, g.k, g.n;                 // 10, 25, 1000
//   g.means[c * g.d + j];          // mean of component c, coordinate j
//   g.icf[c * g.icf_size() + j];   // j < d: log Q_c[j][j]; then Q_c's strictly-lower entries
//   g.x[i * g.d + j];              // point i
//
// A GMM file is whitespace-separated text: `d k n`, then k alphas, k means (d values each),
// k inverse-covariance factors (d(d+1)/2 values each), n points (d values each), and the
// Wishart prior's `gamma m`. Anything else -- a missing file, a bad header, a token that is not a
// finite number, too few values, trailing data -- throws fx::Error naming the file, the line and
// what was expected there, so a truncated download never becomes a silently wrong benchmark.
//
//   fx::data::BaInput b = fx::data::read_ba("/work/shared/adbench/ba/ba1_n49_m7776_p31843.txt");
//   b.n, b.m, b.p;                          // 49 cameras, 7776 points, 31843 observations
//   int c = b.obs[2 * i], q = b.obs[2 * i + 1];   // observation i sees camera c and point q
//   b.cams[c * 11 + 6];                     // camera c's focal length; b.X[q * 3 + j]: point q
//
// A BA file holds `n m p` and then ONE camera (11 values), one point (3), one weight and one
// feature (2); like ADBench, read_ba replicates them into the full problem (every camera equal,
// every point equal, ...) and pairs observation i with camera i mod n and point i mod m. The same
// strictness applies: a bad header, a missing value or trailing data throws fx::Error.
//
//   const std::string d = "/work/shared/adbench/hand/simple_small/";
//   fx::data::HandInput h = fx::data::read_hand(d + "model", d + "hand1_t26_c100.txt");
//   h.bones(), h.vertices(), h.npoints();   // 22, 544, 100; h.theta.size() == 26
//   h.base_relatives[16 * b + 4 * r + c];   // bone b's base_relative matrix, row r, column c
//   h.weights[v * h.bones() + b];           // skinning weight of bone b on vertex v (dense)
//   int c = h.correspondences[i];           // point i's vertex (simple) or triangle (complicated)
//
// The hand model is three ':'-separated, line-based files (model/bones.txt, vertices.txt,
// triangles.txt); the instance is whitespace-separated `n_pts n_theta`, n_pts records
// `correspondence x y z`, in the complicated variant 2·n_pts surface coordinates us, then
// n_theta pose parameters. The variant is told by the count of values after the points. A bad
// field count, a non-number, an index out of range (parent, bone, vertex, triangle) or a count
// matching neither variant throws fx::Error naming the file and the line.
#pragma once
#include <string>
#include <vector>

namespace fx::data {

struct GmmInput {
  int d = 0;                   // dimension of the points
  int k = 0;                   // mixture components
  int n = 0;                   // points
  std::vector<double> alphas;  // k: component log-weights (before normalisation)
  std::vector<double> means;   // k × d, row-major
  std::vector<double> icf;     // k × d(d+1)/2: d logs of Q's diagonal, then the strictly-lower
                               // entries column by column (column 0 rows 1..d-1, column 1 ...)
  std::vector<double> x;       // n × d, row-major
  double gamma = 0;            // Wishart prior: scale
  int m = 0;                   // Wishart prior: extra degrees of freedom (n' = d + m + 1)

  int icf_size() const { return d * (d + 1) / 2; }
};

GmmInput read_gmm(const std::string& path);

// Bundle adjustment, in ADBench's layout (its BAInput).
struct BaInput {
  static constexpr int kCamParams = 11;  // rotation (Rodrigues, 3), centre (3), focal (1),
                                         // principal point (2), radial distortion (2)
  int n = 0;                             // cameras
  int m = 0;                             // points
  int p = 0;                             // observations
  std::vector<double> cams;              // n × 11, row-major
  std::vector<double> X;                 // m × 3
  std::vector<double> w;                 // p weights
  std::vector<double> feats;             // p × 2 observed image positions
  std::vector<int> obs;                  // p × 2: (camera index, point index) of each observation
};

BaInput read_ba(const std::string& path);

// Hand tracking, in ADBench's layout (its HandInput): a skinned hand mesh and one instance.
struct HandInput {
  // The model (model/bones.txt, vertices.txt, triangles.txt).
  std::vector<std::string> bone_names;
  std::vector<int> parents;                    // -1 for the root; a parent precedes its children
  std::vector<double> base_relatives;          // bones × 16: 4×4 row-major
  std::vector<double> inverse_base_absolutes;  // bones × 16: 4×4 row-major
  std::vector<double> base_positions;          // vertices × 3
  std::vector<double> weights;                 // vertices × bones, dense (0 where none is listed)
  std::vector<int> triangles;                  // triangles × 3 vertex indices
  // The instance (hand{k}_t26_c{N}.txt).
  std::vector<int> correspondences;  // per point: a vertex (simple) or a triangle (complicated)
  std::vector<double> points;        // points × 3
  std::vector<double> us;            // points × 2 in the complicated variant, else empty
  std::vector<double> theta;         // the pose parameters (26 in ADBench's files)
  int bones() const { return int(parents.size()); }
  int vertices() const { return int(base_positions.size() / 3); }
  int npoints() const { return int(correspondences.size()); }
  bool complicated() const { return !us.empty(); }
};
// model_dir: the folder holding bones.txt, vertices.txt and triangles.txt.
HandInput read_hand(const std::string& model_dir, const std::string& instance_path);

}  // namespace fx::data
