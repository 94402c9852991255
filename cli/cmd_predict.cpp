// `fastnn predict --checkpoint RUN_OR_CKPT --input PATH... [--output FILE] [--top_k 5] [--format jsonl|csv]
//  [--embeddings FILE.npy|FILE.safetensors]`: classifies image files, image folders, TFRecord shard sets and base64-TSV files with a trained checkpoint
// (trainer/inference/predict.h; docs/INFERENCE.md).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/error_report.h"
#include "core/output_file.h"
#include "core/check.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/comm/communicator.h"
#include "trainer/inference/embedding_writer.h"
#include "trainer/inference/input_classes.h"
#include "trainer/inference/predict.h"
#include "trainer/loop/preset_fields.h"

namespace fastnn::cli {
namespace {

struct PredictArgs {
  std::string checkpoint, output, format, device = "auto", split, embeddings, precision;
  std::vector<std::string> inputs;
  int top_k = 5, batch_size = 0, forward_batch = 0;
  bool skip_bad = false, quiet = false, overwrite = false;
};

// The run's own mean, std and crop_pct, which predict applies as training did: " (mean 0.5, std 0.25)".
std::string own_values_note(const JobConfig& run) {
  const std::string own = loop::evaluation_fields_text(loop::preset_fields(run));
  return own.empty() ? "" : " (" + own + ")";
}

// Under mpirun every rank learns whether any rank failed to set up (bad flags, an unreadable input or
// checkpoint, an output that cannot be created): the lowest failing rank reports its error, and every
// rank exits with the others (none is left waiting in a collective).
void agree_on_setup(Communicator& comm, const std::exception_ptr& error) {
  if (comm.world_size() == 1) {
    if (error) std::rethrow_exception(error);
    return;
  }
  int64_t v = error ? comm.world_size() - comm.rank() : 0;
  comm.allreduce_max(std::span<int64_t>(&v, 1));
  if (v == 0) return;
  const bool reporter = comm.world_size() - v == comm.rank();
  exit_with_the_other_ranks(reporter ? error : nullptr, [&comm] { comm.barrier(); });
}

// The images the job classifies, where the inputs say how many they hold (0: unknown): with few, setups
// that only repay over many images are left out (PredictorOptions::job_images). The whole job's count on
// every rank, not the rank's share, so that each rank picks the kernels one process would and the output
// stays equal to one process's whatever the rank count.
int64_t job_images(const std::vector<inference::PredictInput>& inputs) {
  return static_cast<int64_t>(inference::known_total(inputs));
}

void predict(const PredictArgs& a, Communicator& comm) {
  const bool writer = comm.rank() == 0;
  inference::PredictFormat format{};
  std::vector<inference::PredictInput> inputs;
  std::unique_ptr<inference::Predictor> predictor_owner;
  std::unique_ptr<OutputFile> file;  // core/output_file.h: complete or not at all, never over an input
  std::unique_ptr<inference::EmbeddingWriter> embeddings;
  std::exception_ptr setup_error;
  try {
    format = inference::predict_output_format(a.format, a.output);
    inputs = inference::resolve_inputs(a.inputs, a.split);
    if (!a.embeddings.empty()) inference::embedding_format(a.embeddings);  // refuses another extension before any work
    predictor_owner = std::make_unique<inference::Predictor>(
        a.checkpoint, inference::PredictorOptions{.device = a.device, .batch_size = a.batch_size,
                                                  .forward_batch = a.forward_batch, .top_k = a.top_k,
                                                  .embeddings = !a.embeddings.empty(), .local_rank = comm.local_rank(),
                                                  .precision = a.precision, .job_images = job_images(inputs)});
    inference::check_input_classes(inputs, predictor_owner->model());  // shards numbered otherwise are refused
    if (writer && (!a.output.empty() || !a.embeddings.empty())) {
      // What this command reads must survive it: -o naming an input image or the checkpoint is refused.
      std::vector<std::string> read = checkpoint::checkpoint_file_paths(predictor_owner->model().checkpoint);
      for (const inference::PredictInput& in : inputs) read.push_back(in.path);
      refuse_existing_output(a.output, a.overwrite, read);
      refuse_existing_output(a.embeddings, a.overwrite, read);
      if (!a.output.empty()) file = std::make_unique<OutputFile>(a.output, OutputFile::Options{.inputs = read});
      if (!a.embeddings.empty())
        embeddings = std::make_unique<inference::EmbeddingWriter>(a.embeddings, predictor_owner->model().embedding_size, read);
    }
  } catch (const std::exception&) {
    setup_error = std::current_exception();
  }
  agree_on_setup(comm, setup_error);
  inference::Predictor& predictor = *predictor_owner;
  const inference::ModelInfo& m = predictor.model();
  if (!a.quiet && writer)
    std::fprintf(stderr, "predict: %s (step %lld): %s, %d classes, %dx%dx%d %s preprocessing%s, %s, batch %d%s\n",
                 m.checkpoint.c_str(), static_cast<long long>(m.step), m.model_name.c_str(), m.num_classes, m.height,
                 m.width, m.channels, m.preset.c_str(), own_values_note(m.config).c_str(), m.device.c_str(),
                 predictor.batch_size(),
                 inference::forward_batch_note(m, predictor.batch_size()).c_str());
  if (!a.quiet && writer && comm.world_size() > 1)
    std::fprintf(stderr, "predict: %d ranks, batch b on rank b %% %d, output written by rank 0 in input order\n",
                 comm.world_size(), comm.world_size());
  std::FILE* out = file ? file->get() : stdout;
  inference::PredictRunOptions ro{.format = format, .skip_bad = a.skip_bad, .progress = !a.quiet};
  if (!a.embeddings.empty())
    ro.on_embedding = [&embeddings](std::span<const float> row) {
      if (embeddings) embeddings->add_row(row);
    };
  const inference::PredictSummary s = inference::run_predict(
      predictor, inputs, ro,
      [out](const std::string& line) {
        std::fwrite(line.data(), 1, line.size(), out);
        std::fputc('\n', out);
      },
      &comm);
  if (embeddings) embeddings->commit();
  if (file) file->commit();  // stdout is flushed and checked at exit (cli/main.cpp)
  if (!a.quiet && writer)
    std::fprintf(stderr, "predict: %lld inputs classified, %lld skipped, %.1f s\n", static_cast<long long>(s.predicted),
                 static_cast<long long>(s.skipped), s.seconds);
}

}  // namespace

void add_predict_command(CLI::App& app) {
  auto a = std::make_shared<PredictArgs>();
  CLI::App* cmd = app.add_subcommand("predict",
                                     "Classify images, image folders, TFRecord shards or base64-TSV files with a "
                                     "checkpoint (under mpirun: split over the ranks, same output)");
  cmd->add_option("--checkpoint", a->checkpoint, "Checkpoint prefix or file, or a run directory (its latest)")->required();
  cmd->add_option("--input,-i", a->inputs,
                  "Image file, folder of images (recursive), TFRecord file, shard folder with manifest.json, or base64-TSV "
                  "file (*.tsv); repeatable")
      ->required();
  cmd->add_option("--output,-o", a->output, "Write the predictions here (default: stdout)");
  cmd->add_flag("--overwrite", a->overwrite, "Replace an existing --output or --embeddings file");
  cmd->add_option("--top_k,--top-k", a->top_k, "Classes per input in `topk`")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--format", a->format, "jsonl (one JSON object per input) or csv (default: -o's extension, .csv or .jsonl; "
                  "else jsonl)");
  cmd->add_option("--device", a->device, "cpu, cuda or auto");
  cmd->add_option("--precision", a->precision,
                  "fp32, fp16, bf16 or auto (default: the run's); on the CPU, bf16 computes the convolutions followed by a "
                  "batch norm in bfloat16 where the CPU has bf16 instructions")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16", "auto"}));
  cmd->add_option("--batch_size,--batch-size", a->batch_size,
                  "Images decoded and classified together (default: the run's batch_size)")
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--forward_batch,--forward-batch", a->forward_batch,
                  "Images per forward, at most --batch_size (default 0: the whole batch, or on the CPU slices that keep a "
                  "memory-bound network such as MobileNet in the L3 cache)")
      ->check(CLI::Range(0, 1 << 16));
  cmd->add_option("--embeddings", a->embeddings,
                  "Also write each input's embedding (the features feeding the classifier) as a float32 [N, D] array, in "
                  "output order: FILE.npy (NumPy) or FILE.safetensors (tensor \"embeddings\")");
  cmd->add_option("--split", a->split, "Split of a shard folder (default: validation, else test)");
  cmd->add_flag("--skip-bad,--skip_bad", a->skip_bad, "Report an undecodable image with its path and go on (default: fatal)");
  cmd->add_flag("--quiet,-q", a->quiet, "No progress or summary on stderr");
  cmd->callback([a] {
    // Under mpirun the inputs are split over the ranks by batch; rank 0 writes everything.
    std::unique_ptr<Communicator> comm = make_communicator();
    try {
      predict(*a, *comm);
    } catch (const inference::SplitPredictError&) {
      if (comm->world_size() == 1) throw;
      // Every rank has it: rank 0 says it once.
      exit_with_the_other_ranks(comm->rank() == 0 ? std::current_exception() : nullptr, [&] { comm->barrier(); });
    } catch (const std::exception& e) {
      if (comm->world_size() == 1) throw;
      std::fprintf(stderr, "fastnn: error: rank %d/%d: %s; aborting the job so that the other ranks do not wait for this one\n",
                   comm->rank(), comm->world_size(), e.what());
      comm->abort(1);
      throw;
    }
  });
}

}  // namespace fastnn::cli
