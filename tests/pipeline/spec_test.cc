// The pipeline spec's errors (each names the file, the line and the step),
// the steps' order, and which change of a step's inputs, command or
// parameters changes its cache key.
#include "pipeline/spec.h"

#include <gtest/gtest.h>

#include "pipeline/cache.h"
#include "pipeline/dag.h"

namespace cohort::pipeline {
namespace {

std::string ErrorOf(const std::string& yaml) {
  auto spec = ParseSpec(yaml, "p.yaml", "/data");
  return spec.ok() ? "ok" : spec.status().message();
}

TEST(PipelineSpec, ReadsStepsInputsAndOptions) {
  auto spec = ParseSpec(R"(name: images
parallel: 8
steps:
  - name: resize
    inputs: [{dataset: raw@v2, glob: file}]
    command: python3 resize.py --size 32
    params: {size: 32}
    resources: {slots: 2, batch: 100}
    retries: 1
    output: resized
  - name: train
    inputs: [{step: resize, name: images}, {dataset: /abs/labels}]
    command: [cohort, run, -np, "2", --, python3, train.py]
    output: s3://bucket/models
)",
                        "p.yaml", "/data");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->name, "images");
  EXPECT_EQ(spec->parallel, 8);
  const StepSpec& resize = spec->steps[0];
  EXPECT_EQ(resize.inputs[0].dataset, "/data/raw");
  EXPECT_EQ(resize.inputs[0].ref, "v2");
  EXPECT_EQ(resize.inputs[0].name, "RAW");
  EXPECT_EQ(resize.inputs[0].glob, Glob::kSample);
  EXPECT_EQ(resize.command, (std::vector<std::string>{"python3", "resize.py", "--size", "32"}));
  EXPECT_EQ(resize.params.at("size"), "32");
  EXPECT_EQ(resize.slots, 2);
  EXPECT_EQ(resize.batch, 100);
  EXPECT_EQ(resize.retries, 1);
  EXPECT_EQ(resize.output, "/data/resized");
  const StepSpec& train = spec->steps[1];
  EXPECT_EQ(train.inputs[0].step, "resize");
  EXPECT_EQ(train.inputs[0].name, "IMAGES");
  EXPECT_EQ(train.inputs[1].dataset, "/abs/labels");
  EXPECT_EQ(train.inputs[1].ref, "main");
  EXPECT_EQ(train.inputs[1].glob, Glob::kWhole);
  EXPECT_EQ(train.output, "s3://bucket/models");
  EXPECT_EQ(PipelineSpec::SplitInput(resize), &resize.inputs[0]);
  EXPECT_EQ(PipelineSpec::SplitInput(train), nullptr);
}

TEST(PipelineSpec, MalformedSpecsAreRefusedWithTheLine) {
  EXPECT_EQ(ErrorOf("name: p\nsteps: [\n"),
            "p.yaml:3: not valid YAML: end of sequence flow not found");
  EXPECT_EQ(ErrorOf("name: p\nsteps:\n  - name: a\n    inputs: [{dataset: d}]\n    command: x\n"
                    "    ouptut: o\n"),
            "p.yaml:6: steps[0].ouptut: unknown key (expected one of: command, inputs, name, "
            "output, params, resources, retries)");
  EXPECT_EQ(ErrorOf("name: p\nsteps:\n  - name: a\n    inputs: [{dataset: d, glob: dir}]\n"
                    "    command: x\n"),
            "p.yaml:4: step 'a': inputs[0].glob: expected whole, sample or file, got 'dir'");
  EXPECT_EQ(ErrorOf("name: p\nsteps:\n  - name: a\n    inputs: [{dataset: d}]\n"),
            "p.yaml:3: step 'a': command: expected a command line or a list of words");
  EXPECT_EQ(ErrorOf("name: p\nsteps:\n  - name: a\n    inputs: [{dataset: d}]\n    command: x\n"
                    "    resources: {batch: 0}\n"),
            "p.yaml:6: step 'a': resources.batch: expected an integer >= 1, got '0'");
  EXPECT_EQ(ErrorOf("name: p\nsteps:\n  - name: a\n    inputs: [{dataset: d, step: b}]\n"
                    "    command: x\n"),
            "p.yaml:4: step 'a': inputs[0]: expected exactly one of dataset: and step:");
  EXPECT_EQ(
      ErrorOf("name: p\nsteps:\n  - name: a\n    inputs:\n      - {dataset: d, glob: sample}\n"
              "      - {dataset: e, glob: file}\n    command: x\n"),
      "p.yaml:5: step 'a': inputs: at most one input may be split into datums");
  EXPECT_EQ(ErrorOf("steps: []\n"), "p.yaml:1: name: missing (the pipeline's name)");
}

TEST(PipelineSpec, UnknownInputsAndCyclesNameTheStep) {
  EXPECT_EQ(ErrorOf("name: p\nsteps:\n  - name: a\n    inputs: [{dataset: d}]\n    command: x\n"
                    "    output: o\n  - name: b\n    inputs: [{step: c}]\n    command: x\n"),
            "p.yaml:8: step 'b': input 'c' is not a step of this pipeline");
  EXPECT_EQ(ErrorOf("name: p\nsteps:\n  - name: a\n    inputs: [{dataset: d}]\n    command: x\n"
                    "  - name: b\n    inputs: [{step: a}]\n    command: x\n"),
            "p.yaml:7: step 'b': input 'a' writes no output (give it output:)");
  EXPECT_EQ(ErrorOf("name: p\nsteps:\n  - name: a\n    inputs: [{step: c}]\n    command: x\n"
                    "    output: o1\n  - name: b\n    inputs: [{step: a}]\n    command: x\n"
                    "    output: o2\n  - name: c\n    inputs: [{step: b}]\n    command: x\n"
                    "    output: o3\n"),
            "p.yaml:3: step 'a': cycle: a -> c -> b -> a");
  EXPECT_EQ(ErrorOf("name: p\nsteps:\n  - name: a\n    inputs: [{step: a}]\n    command: x\n"
                    "    output: o\n"),
            "p.yaml:3: step 'a': cycle: a -> a");
  EXPECT_EQ(ErrorOf("name: p\nsteps:\n  - name: a\n    inputs: [{dataset: d}]\n    command: x\n"
                    "  - name: a\n    inputs: [{dataset: d}]\n    command: x\n"),
            "p.yaml:6: steps[1].name: a second step named 'a'");
}

TEST(PipelineDag, StepsComeAfterTheirInputsAndDownstreamFollows) {
  auto spec = ParseSpec(R"(name: p
steps:
  - {name: eval, inputs: [{step: train}, {step: resize}], command: x}
  - {name: train, inputs: [{step: resize}], command: x, output: m}
  - {name: resize, inputs: [{dataset: raw}], command: x, output: r}
  - {name: other, inputs: [{dataset: raw}], command: x}
)",
                        "p.yaml", "/data");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  std::vector<std::string> order, down;
  for (const StepSpec* s : StepOrder(*spec)) order.push_back(s->name);
  EXPECT_EQ(order, (std::vector<std::string>{"resize", "train", "eval", "other"}));
  for (const StepSpec* s : Downstream(*spec, "resize")) down.push_back(s->name);
  EXPECT_EQ(down, (std::vector<std::string>{"train", "eval"}));
}

TEST(PipelineCache, EachHashedComponentChangesTheKey) {
  StepSpec step;
  step.command = {"python3", "resize.py"};
  step.params = {{"size", "32"}};
  std::vector<ResolvedInput> inputs = {{"RAW", "/data/raw", "c1", true},
                                       {"LABELS", "/data/labels", "l1", false}};
  const std::string key = CacheKey(step, inputs), datum_key = DatumKey(step, inputs);
  EXPECT_EQ(CacheKey(step, inputs), key);  // deterministic
  auto changed = [&](auto change) {
    StepSpec s = step;
    std::vector<ResolvedInput> in = inputs;
    change(s, in);
    return std::make_pair(CacheKey(s, in) != key, DatumKey(s, in) != datum_key);
  };
  // The split input's commit: a new key, but earlier per-datum results still apply.
  EXPECT_EQ(changed([](StepSpec&, auto& in) { in[0].commit = "c2"; }), std::make_pair(true, false));
  EXPECT_EQ(changed([](StepSpec&, auto& in) { in[1].commit = "l2"; }), std::make_pair(true, true));
  EXPECT_EQ(changed([](StepSpec& s, auto&) { s.command.push_back("--fast"); }),
            std::make_pair(true, true));
  EXPECT_EQ(changed([](StepSpec& s, auto&) { s.params["size"] = "64"; }),
            std::make_pair(true, true));
  EXPECT_EQ(changed([](StepSpec& s, auto&) { s.slots = 4; }), std::make_pair(false, false));
}

}  // namespace
}  // namespace cohort::pipeline
