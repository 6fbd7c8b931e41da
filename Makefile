# The benchmark suite's commands. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PY ?= python3
VENV ?= .venv
PYTHON := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
SHARED_DATA ?= $(abspath ../shared/data)
FASHION_MNIST := /usr/share/datasets/fashion-mnist
CHROMIUM := /usr/bin/chromium
RUN := $(PYTHON) -m suite.run
BENCH_DIR ?= runs/bench-quick
BENCH_FULL_DIR ?= runs/bench-full
RUNS ?= $(BENCH_DIR)
# Every bench job runs on one thread, two jobs at a time (faster on 2 cores than one job on two
# threads). Speed points run alone on their core: on two threads of a 2-core VM a point moves far
# more from one process to the next (docs/measurement.md).
PAR := OMP_NUM_THREADS=1
# The tests run one thread each (tests/conftest.py), so one pytest-xdist worker a core; the suite.run
# processes tests start get one thread too, so that two workers never crowd one core with OpenMP
# threads waiting on each other (nproc: the cores this process may use). TEST_WORKERS=0: one process.
TEST_WORKERS ?= $(shell nproc)
PYTEST := $(PAR) $(PYTHON) -m pytest -q --durations=20 -n $(TEST_WORKERS)
# Byte-compiled modules: the install compiles none of torch's 5 GB (--no-compile), and every command
# here caches what it imports under .venv/pycache, so the first process compiles and the others read.
# (An environment that sets PYTHONDONTWRITEBYTECODE=1 would otherwise have every process compile its
# imports again.)
export PYTHONDONTWRITEBYTECODE :=
export PYTHONPYCACHEPREFIX := $(abspath $(VENV))/pycache
NAME ?= quick
# The quick benchmark's step budgets, sized so that `make bench` fits in 20 minutes on the slowest CPU
# kind it runs on (2 cores of an AVX2-only EPYC: docs/benchmark.md) and each row's models plateau where
# that fits (the report's converged column says which do not). Fixed steps, not time: every row gives the
# same figure on every machine; each warms up for a tenth of its steps. SST-2 and DNA; BBC News topics at 64
# and 128 (up to BENCH_NEWS_STEPS, each run stopping at the first of 20 validations from BENCH_NEWS_PLATEAU_FROM
# on where the convergence test calls its curve plateaued: the same rule for every model and both lengths);
# recall at 16-64 ends sooner where validation is perfect. Translation (make bench-translation): steps of the
# quick recipe (which plans 700); the language models (make bench-lm): steps of 16 windows of 128.
BENCH_TRANSLATION_STEPS ?= 150
BENCH_TASK_STEPS ?= 800
BENCH_NEWS_STEPS ?= 1000
BENCH_NEWS_PLATEAU_FROM ?= 300
# BBC News topics at 256 as the tuned and self-pretrained studies run them (results/tuned, results/pretrained)
BENCH_NEWS_LONG_STEPS ?= 200
BENCH_RECALL_LENGTH_STEPS ?= 2000
BENCH_LM_STEPS ?= 150

# Efficient attention in `make bench`: every variant's speed points at 1024 and 4096 beside full
# attention's (from speed_vs_length: the same batch, width and depth), timed briefly; and recall
# with the key at the end, 128 positions from [CLS], beyond the windows' reach after 2 layers
# (local/longformer window 16, bigbird blocks of 16), one budget (150 steps of 16) for every
# variant, ending at perfect validation accuracy (trainer.stop_at=1.0: nothing left to learn, the
# same rule for every variant); runs tagged benchmark=lra go into the report's lra table. By default the reach check
# alone (full, local, longformer, bigbird; batch 16 gives the outcomes of batch 32 in half the
# work); BENCH_RECALL_OTHERS=full,linear,performer,reformer,linformer,nystrom recalls every variant.
BENCH_RECALL_STEPS ?= 150
BENCH_RECALL_OTHERS ?= full
BENCH_ATTENTION_SPEED := job.warmup=1 job.repeats=2 job.min_time_s=1 job.measure_peak=false job.time_budget_s=120
BENCH_RECALL = experiment=long_range task=recall task.seq_len=128 task.key_position=-1 task.n_val=100 task.n_test=200 model=transformer \
  benchmark=lra trainer.max_steps=$(BENCH_RECALL_STEPS) trainer.stop_at=1.0 trainer.batch_size=16 trainer.progress=false hydra.sweep.dir=$(BENCH_DIR)/attention_recall \
  'hydra.sweep.subdir=recall-L$${task.seq_len}-$${hydra:runtime.choices.model/attention}-s$${seed}'
LRA_DIR ?= $(BENCH_FULL_DIR)/lra
# The LRA at CPU scale (experiment=lra_cpu): the recurrent rows, then the attention rows (the Transformer's MLP
# 4 x 64 wide, a setting only it has), into one directory; two jobs at a time, one thread each. A killed run
# resumes: each finished job is skipped and an interrupted one continues from its last.pt.
LRA_CPU_DIR ?= runs/bench-lra
# Seeds of every cell: two by default, so that each cell has its range over seeds (three give a 95 % interval); LRA_CPU_SEEDS=0 is seed 0 alone
# (half the time), 0,1,2 adds a third. The runs already in LRA_CPU_DIR are skipped, so seeds can be added a session
# at a time (results/lra_cpu/duration.md: seed 0, then seed 1 added in another session).
LRA_CPU_SEEDS ?= 0,1
# Timed per seed list: each list has its own first start and its own row in results/lra_cpu/duration.md.
LRA_CPU_COMMAND = make bench-lra$(if $(LRA_CPU_SEEDS), LRA_CPU_SEEDS=$(LRA_CPU_SEEDS))
LRA_CPU_STARTED = $(LRA_CPU_DIR)/.started$(if $(LRA_CPU_SEEDS),-seeds-$(LRA_CPU_SEEDS))
LRA_CPU_ATTENTION := model=transformer model.backbone.d_ff=256 model/attention=full,local,longformer,bigbird,linear,performer,reformer,linformer,nystrom
LRA_CPU_SWEEP = $(PAR) $(RUN) -m experiment=lra_cpu hydra.sweep.dir=$(LRA_CPU_DIR) hydra/launcher=joblib hydra.launcher.n_jobs=2 \
  $(if $(LRA_CPU_SEEDS),seed=$(LRA_CPU_SEEDS))

define bench_attention_speed
	$(PAR) $(RUN) -m experiment=attention_speed hydra.sweep.dir=$(BENCH_DIR)/attention_speed \
	  'model/attention=glob(*,exclude=[explicit,full])' task.seq_len=1024,4096 $(BENCH_ATTENTION_SPEED)
endef

# One core: the variants one after another.
define bench_attention_recall
	$(PAR) $(RUN) -m $(BENCH_RECALL) model/attention=local,longformer ++model.attention.window=16
	$(PAR) $(RUN) -m $(BENCH_RECALL) model/attention=bigbird model.attention.block=16
	$(PAR) $(RUN) -m $(BENCH_RECALL) model/attention=$(BENCH_RECALL_OTHERS)
endef

.PHONY: help install snapshot data fashion-mnist browser pathfinder bench-lm bench-translation bench-lra bench-capabilities test test-slow lint docs precision-check bench bench-tuned bench-pretrained bench-speed-lane bench-side-lane bench-compression bench-full bench-attention bench-attention-full patterns report perf figures gpu-check clean

help: ## List the commands
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[1m%-20s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	# torch and torchvision first, pinned: this pair lies on the machine's disk (no large download)
	$(VENV)/bin/pip install -q --no-compile torch==2.14.1 torchvision==0.29.1
	$(VENV)/bin/pip install -q --no-compile -e '.[test,docs]'
	touch $@

install: $(STAMP) ## Create .venv with torch 2.14.1, torchvision 0.29.1 and the project

fashion-mnist: ## Install Fashion-MNIST from Debian (dataset-fashion-mnist), if missing
	@if [ ! -d $(FASHION_MNIST) ]; then \
	  echo "installing dataset-fashion-mnist (Debian package)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist >/dev/null) \
	    || echo "warning: could not install dataset-fashion-mnist; the Fashion-MNIST dataset will be missing"; \
	fi

browser: ## Install Debian's chromium (the report page's test opens index.html in it, headless), if missing
	@if [ ! -x $(CHROMIUM) ]; then \
	  echo "installing chromium (Debian package)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	    || echo "warning: could not install chromium; tests/test_report_page.py will skip (and fail in CI)"; \
	fi

data: install fashion-mnist ## Prepare data/ from ../shared/data (links) and Fashion-MNIST
	$(PYTHON) -m suite.data.datadir --source $(SHARED_DATA)

test: data lint docs browser ## Run the tests (fast set; a few minutes), after the lint and the documentation build
	$(PYTEST) -m "not slow"

lint: install ## ruff: lint and format check (line length 120; `ruff format .` applies the format)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

snapshot: install ## Rewrite tests/data/composed_configs.json after an intended change of an existing config (a new config needs none)
	$(PYTHON) tests/test_composed_configs.py --write

docs: install ## The documentation site from docs/ into site/ (MkDocs + Material; --strict: a broken link or a missing included report fails)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

test-slow: data ## Run the slower checks (marker 'slow')
	$(PYTEST) -m slow

bench: data ## The quick benchmark (its time per CPU kind: docs/benchmark.md): every task, speed and accuracy against length, attention variants, compression, language models; the report in results/quick/
	@mkdir -p $(BENCH_DIR) && date +%s > $(BENCH_DIR)/.started
	@# Two lanes at once, one core and one thread each, balanced by the jobs' measured times: the speed
	@# points (alone on their core) and then training jobs on one; the tasks, compression of their
	@# SST-2 Transformer and the longer training jobs on the other.
	$(MAKE) --no-print-directory -j2 bench-speed-lane bench-side-lane
	$(PYTHON) -m suite.report $(BENCH_DIR) --name quick --wandb
	@echo "make bench: the runs and the report took $$(( $$(date +%s) - $$(cat $(BENCH_DIR)/.started) )) s (after set-up)"

# The training jobs of make bench's two lanes: translation at a fixed step budget; recall at 16-64,
# ending at perfect validation accuracy (the same rule for every model; the record keeps its steps);
# BBC News topics at 64 and 128, stopping at a plateau.
BENCH_TRANSLATION = task=translation trainer=quick hydra.sweep.dir=$(BENCH_DIR)/translation trainer.max_steps=$(BENCH_TRANSLATION_STEPS) \
  trainer.scheduler.warmup_steps=$$(( $(BENCH_TRANSLATION_STEPS) / 10 )) \
  trainer.progress=false 'hydra.sweep.subdir=$${task.name}-$${task.direction}-$${model.name}-s$${seed}'
BENCH_RECALL_LENGTHS = experiment=long_range hydra.sweep.dir=$(BENCH_DIR)/long_range task=recall task.seq_len=16,32,64 \
  trainer.max_steps=$(BENCH_RECALL_LENGTH_STEPS) trainer.scheduler.warmup_steps=40 trainer.stop_at=1.0 trainer.progress=false
BENCH_NEWS = experiment=long_range hydra.sweep.dir=$(BENCH_DIR)/long_range task=news_topic trainer.progress=false \
  trainer.max_steps=$(BENCH_NEWS_STEPS) trainer.scheduler.warmup_steps=$$(( $(BENCH_NEWS_STEPS) / 10 )) \
  trainer.evaluations=20 trainer.stop_on_plateau=$(BENCH_NEWS_PLATEAU_FROM) model=transformer,lstm

# make bench's speed lane: every point alone on its core, one thread. A training process on the
# other core moved a point no more than two quiet runs differ (docs/benchmark.md), and each record
# keeps the load it saw (speed.others_cpu_share). Then recall at 16-64, the shorter news topics, the
# gradient probe, the attention variants' recall and the LSTM language model.
bench-speed-lane:
	$(PAR) $(RUN) -m experiment=speed_vs_length hydra.sweep.dir=$(BENCH_DIR)/speed_vs_length model=transformer,lstm,gru,rnn \
	  task.seq_len=64,256,1024,4096 job.batch_size=4 job.warmup=1 job.repeats=3 job.time_budget_s=120 job.max_len=4096
	@# the modern recurrences beside them at 1024 and 4096 (docs/recurrence.md: every length to 16K)
	$(PAR) $(RUN) -m experiment=speed_vs_length hydra.sweep.dir=$(BENCH_DIR)/speed_recurrences model=mingru,minlstm,mamba,s4d \
	  task.seq_len=1024,4096 job.batch_size=4 job.warmup=1 job.repeats=3 job.time_budget_s=120 job.max_len=4096
	@# the field's baselines (docs/baselines.md: every length to 16K), one point each
	$(PAR) $(RUN) -m experiment=speed_vs_length hydra.sweep.dir=$(BENCH_DIR)/speed_baselines \
	  model=mamba2,gla,deltanet,gated_deltanet,retnet,rwkv7,xlstm,hyena,based task.seq_len=1024 job.batch_size=4 job.warmup=1 job.repeats=3 job.time_budget_s=120
	$(PAR) $(RUN) -m experiment=speed_vs_length hydra.sweep.dir=$(BENCH_DIR)/speed_explicit_attention \
	  model=transformer model/attention=explicit task.seq_len=64,256,1024 job.batch_size=4 job.warmup=1 job.repeats=3 job.time_budget_s=120
	@# fp32, and bf16 where the CPU has bf16 instructions (suite.runtime.numerics.timed_precisions: AVX2 alone emulates it at ~1 GFLOP/s)
	$(PAR) $(RUN) -m experiment=mfu_standard hydra.sweep.dir=$(BENCH_DIR)/mfu_standard job.precision=$$($(PYTHON) -m suite.runtime.numerics --timed) 'hydra.sweep.subdir=$${job.precision}'
	$(bench_attention_speed)
	$(PAR) $(RUN) -m $(BENCH_RECALL_LENGTHS) model=transformer,lstm
	$(PAR) $(RUN) -m $(BENCH_NEWS) task.seq_len=64
	$(PAR) $(RUN) -m experiment=gradient_flow hydra.sweep.dir=$(BENCH_DIR)/gradient_flow
	$(bench_attention_recall)

# make bench's other lane: the classification tasks (their SST-2 Transformer is what compression
# compresses, so it runs here, after them), the Transformer language model, translation, the
# longer news topics, Lead-1 and one MQAR point.
bench-side-lane:
	$(PAR) $(RUN) -m experiment=bench_tasks hydra.sweep.dir=$(BENCH_DIR)/tasks task=protein
	$(PAR) $(RUN) -m experiment=bench_tasks hydra.sweep.dir=$(BENCH_DIR)/tasks task=sentiment,dna \
	  trainer.max_steps=$(BENCH_TASK_STEPS) trainer.scheduler.warmup_steps=$$(( $(BENCH_TASK_STEPS) / 10 ))
	$(PAR) $(RUN) -m experiment=bench_tasks hydra.sweep.dir=$(BENCH_DIR)/tasks task=image trainer.max_steps=2000 \
	  trainer.scheduler.warmup_steps=200
	$(bench_compression)
	$(PAR) $(RUN) -m $(BENCH_NEWS) task.seq_len=128
	$(PAR) $(RUN) -m task=summarization model=lead hydra.sweep.dir=$(BENCH_DIR)/summarization \
	  'hydra.sweep.subdir=$${task.name}-$${task.dataset}-$${model.name}-s$${seed}'
	@# the capability map's two-task slice (docs/capabilities.md): parity, where a recurrence tracks the state and
	@# attention does not, and MQAR, the reverse; each model at 100,000 backbone parameters, one rate, one seed
	$(PAR) $(PYTHON) -m tasks.capabilities.map 'capability_map.lrs=[0.001]' 'capability_map.seeds=[0]' \
	  hydra.sweep.dir=$(BENCH_DIR)/capabilities --models transformer lstm --tasks parity mqar --sizes 100000 --jobs 1 --no-knobs

# Translation as make bench ran it until issue 39 (still learning at any budget that fits it: BLEU 1.6 and 0.75
# after 150 steps; results/targets has the quick recipe's 700): Multi30k en->de, the Transformer and the LSTM.
bench-translation: data ## Translation at make bench's old budget (minutes): the Transformer and the LSTM, 150 steps; results/translation_bench/
	$(PAR) $(RUN) -m $(subst $(BENCH_DIR),runs/bench-translation,$(BENCH_TRANSLATION)) model=transformer,lstm
	$(PYTHON) -m suite.report runs/bench-translation --name translation_bench

# The language models as make bench ran them until issue 39 (still learning at any budget that fits it: perplexity
# 519 and 881 after 150 steps; results/lm_quick has 600): BBC News, 128-token context, BENCH_LM_STEPS of 16 windows,
# then the context curve; two at a time. The report: results/lm_bench/.
bench-lm: data ## The decoder-only Transformer and LSTM language models at make bench's old budget (minutes), results/lm_bench/
	$(PAR) $(RUN) -m experiment=lm_bench hydra.sweep.dir=runs/bench-lm trainer.max_steps=$(BENCH_LM_STEPS) model=transformer,lstm \
	  hydra/launcher=joblib hydra.launcher.n_jobs=2
	$(PYTHON) -m suite.report runs/bench-lm --name lm_bench

# make bench-tuned: an equal tuning budget (experiment=tune, docs/tuning.md) for the Transformer and the LSTM on
# the five tasks of the tuned table, each at make bench's step budget and default settings (trial 0 of each
# study), then the best and the default setting with three seeds; the studies one after another, each two
# trials at a time; a killed run resumes (the same command). The report: results/$(TUNED_NAME)/.
TUNED_DIR ?= runs/tuned
TUNED_NAME ?= tuned
TUNE_TRIALS ?= 12
TUNE_MODELS ?= transformer lstm
TUNE = $(RUN) -m experiment=tune tune.n_trials=$(TUNE_TRIALS)
# BBC News topics at 256 and recall at 64 as make bench runs them (experiment=long_range's trainer).
TUNE_LONG = trainer.batch_size=32 trainer.scheduler.warmup_steps=40 trainer.max_epochs=100 trainer.time_budget_s=null
bench-tuned: data ## The tuned table (hours: docs/tuning.md): Transformer and LSTM tuned with one budget on five tasks, 3 seeds; results/tuned/
	@mkdir -p $(TUNED_DIR) && date +%s > $(TUNED_DIR)/.started
	@# A study that stops with an error does not stop the others; make fails at the end, after the report.
	status=0; for m in $(TUNE_MODELS); do \
	  $(TUNE) model=$$m task=sentiment hydra.sweep.dir=$(TUNED_DIR)/sentiment-sst2-$$m || status=1; \
	  $(TUNE) model=$$m task=protein hydra.sweep.dir=$(TUNED_DIR)/protein-amp-$$m || status=1; \
	  $(TUNE) model=$$m task=dna hydra.sweep.dir=$(TUNED_DIR)/dna-splice-$$m || status=1; \
	  $(TUNE) model=$$m task=news_topic task.seq_len=256 trainer.max_steps=$(BENCH_NEWS_LONG_STEPS) $(TUNE_LONG) \
	    hydra.sweep.dir=$(TUNED_DIR)/news_topic-L256-$$m || status=1; \
	  $(TUNE) model=$$m task=recall task.seq_len=64 trainer.max_steps=600 trainer.stop_at=1.0 $(TUNE_LONG) \
	    hydra.sweep.dir=$(TUNED_DIR)/recall-L64-$$m || status=1; \
	done; echo $$status > $(TUNED_DIR)/.status
	$(PYTHON) -m suite.report.tuned $(TUNED_DIR) --name $(TUNED_NAME)
	@echo "make bench-tuned: $$(( $$(date +%s) - $$(cat $(TUNED_DIR)/.started) )) s (after set-up)"
	@exit $$(cat $(TUNED_DIR)/.status)

# make bench-pretrained: from scratch against self-pretrained (pretrain=denoise: 200 steps of the task's own
# training inputs, then the same fine-tuning), the Transformer and the LSTM, three seeds, on BBC News topics at
# 256 and recall at 64 as make bench runs them; two runs at a time. The report: results/$(PRETRAINED_NAME)/.
PRETRAINED_DIR ?= runs/pretrained
PRETRAINED_NAME ?= pretrained
PRETRAIN_SEEDS ?= 0,1,2
PRETRAIN_RUN = $(RUN) -m experiment=long_range hydra/launcher=joblib hydra.launcher.n_jobs=2 trainer.progress=false \
  model=transformer,lstm pretrain=scratch,denoise seed=$(PRETRAIN_SEEDS) \
  'hydra.sweep.subdir=$${task.dataset}-$${model.name}-L$${task.seq_len}-pt$${oc.select:pretrain.steps,0}-s$${seed}'
bench-pretrained: data ## From scratch against self-pretrained (about an hour here: docs/tuning.md), Transformer and LSTM, 3 seeds; results/pretrained/
	@mkdir -p $(PRETRAINED_DIR) && date +%s > $(PRETRAINED_DIR)/.started
	$(PRETRAIN_RUN) hydra.sweep.dir=$(PRETRAINED_DIR)/news_topic task=news_topic task.seq_len=256 trainer.max_steps=$(BENCH_NEWS_LONG_STEPS)
	$(PRETRAIN_RUN) hydra.sweep.dir=$(PRETRAINED_DIR)/recall task=recall task.seq_len=64 trainer.max_steps=600 trainer.stop_at=1.0
	$(PYTHON) -m suite.report.pretrained $(PRETRAINED_DIR) --name $(PRETRAINED_NAME)
	@echo "make bench-pretrained: $$(( $$(date +%s) - $$(cat $(PRETRAINED_DIR)/.started) )) s (after set-up)"

bench-attention: data ## make bench's efficient-attention part alone: every variant's speed at 1024 and 4096, recall at 128 (key at the end)
	$(bench_attention_speed)
	$(bench_attention_recall)

# Compression in make bench (after the tasks: it compresses their SST-2 Transformer): two
# post-training methods, no fine-tuning; compression.md and two figures.
BENCH_COMPRESS ?= dynamic_int8,onnx_int8
define bench_compression
	$(PAR) $(RUN) -m experiment=compression task=sentiment model=transformer hydra.sweep.dir=$(BENCH_DIR)/compression \
	  job.checkpoint=$(BENCH_DIR)/tasks/sentiment-sst2-transformer-s0/checkpoints/best.pt compress=$(BENCH_COMPRESS) job.min_time_s=5
endef

bench-compression: data ## make bench's compression step alone (after `make bench`): int8 against fp32, timed interleaved
	$(bench_compression)

GPU_CHECK_DIR ?= runs/gpu-check
GPU_CHECK_DEVICE ?= cuda
gpu-check: data ## On a GPU machine (< 5 min): numerics tests on CUDA, a bf16 smoke run of every task, a speed point, a 1-GPU torchrun run
	@mkdir -p $(GPU_CHECK_DIR) && $(PYTHON) -c "import torch; print('device:', torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no CUDA')" | tee $(GPU_CHECK_DIR)/summary.txt
	set -o pipefail; SUITE_TEST_DEVICE=$(GPU_CHECK_DEVICE) $(PYTHON) -m pytest -q -p no:cacheprovider tests/test_encoder_reference.py tests/test_attention.py \
	  tests/test_attention_variants.py tests/test_vit.py 2>&1 | tail -3 | tee -a $(GPU_CHECK_DIR)/summary.txt
	set -o pipefail; $(RUN) -m task=sentiment,protein,dna,image,translation,summarization,news_topic,long_range model=transformer trainer=smoke \
	  trainer.precision=bf16 device=$(GPU_CHECK_DEVICE) logger=none hydra.sweep.dir=$(GPU_CHECK_DIR)/smoke | grep -E '^\[(ok|failed|diverged|oom|timeout|skipped|interrupted)\]' | tee -a $(GPU_CHECK_DIR)/summary.txt
	set -o pipefail; $(RUN) job=speed task=long_range task.seq_len=1024 model=transformer device=$(GPU_CHECK_DEVICE) logger=none \
	  hydra.run.dir=$(GPU_CHECK_DIR)/speed | grep -E '^\[(ok|failed|diverged|oom|timeout|skipped|interrupted)\]' | tee -a $(GPU_CHECK_DIR)/summary.txt
	set -o pipefail; $(VENV)/bin/torchrun --nproc_per_node=1 -m suite.run task=sentiment model=transformer trainer=smoke device=$(GPU_CHECK_DEVICE) \
	  logger=none hydra.run.dir=$(GPU_CHECK_DIR)/torchrun | grep -E '^\[(ok|failed|diverged|oom|timeout|skipped|interrupted)\]' | tee -a $(GPU_CHECK_DIR)/summary.txt
	@echo "gpu-check: figures in $(GPU_CHECK_DIR)/summary.txt"

bench-full: data ## The full benchmark: trainer=full on every task, full sweeps (hours on a CPU; meant for a GPU)
	$(RUN) -m experiment=bench_tasks hydra.sweep.dir=$(BENCH_FULL_DIR)/tasks trainer=full trainer.time_budget_s=null \
	  trainer.progress=true seed=0,1,2
	$(RUN) -m experiment=translation_full hydra.sweep.dir=$(BENCH_FULL_DIR)/translation model=transformer,lstm
	$(RUN) -m task=summarization trainer=full hydra.sweep.dir=$(BENCH_FULL_DIR)/summarization model=transformer,lstm,lead
	$(RUN) -m experiment=speed_vs_length hydra.sweep.dir=$(BENCH_FULL_DIR)/speed_vs_length
	$(RUN) -m experiment=mfu_standard hydra.sweep.dir=$(BENCH_FULL_DIR)/mfu_standard job.precision=fp32,bf16 'hydra.sweep.subdir=$${job.precision}'
	$(RUN) -m experiment=speed_vs_length hydra.sweep.dir=$(BENCH_FULL_DIR)/speed_vs_length_bf16 job.precision=bf16
	$(RUN) -m experiment=long_range hydra.sweep.dir=$(BENCH_FULL_DIR)/long_range
	$(RUN) -m experiment=gradient_flow hydra.sweep.dir=$(BENCH_FULL_DIR)/gradient_flow task.seq_len=512
	$(RUN) -m experiment=language_model hydra.sweep.dir=$(BENCH_FULL_DIR)/language_model
	$(RUN) -m experiment=context_use hydra.sweep.dir=$(BENCH_FULL_DIR)/context_use
	$(RUN) -m experiment=generation_cost hydra.sweep.dir=$(BENCH_FULL_DIR)/generation_cost
	$(RUN) -m experiment=generation_cost hydra.sweep.dir=$(BENCH_FULL_DIR)/generation_cost_attention model=transformer model/attention=linear,local
	$(bench_attention_full)
	$(PYTHON) -m suite.report $(BENCH_FULL_DIR) --name full --wandb

define bench_attention_full
	$(PAR) $(RUN) -m experiment=attention_speed hydra.sweep.dir=$(BENCH_FULL_DIR)/attention_speed
	$(PAR) $(RUN) -m experiment=speed_vs_length hydra.sweep.dir=$(BENCH_FULL_DIR)/attention_speed_lstm model=lstm \
	  task.seq_len=1024,2048,4096,8192,16384 job.batch_size=4 job.max_len=16384 job.time_budget_s=3600
	$(RUN) -m experiment=lra hydra.sweep.dir=$(LRA_DIR)
	$(RUN) -m experiment=lra hydra.sweep.dir=$(LRA_DIR) lra=text task.seq_len=1024,2048
endef

bench-attention-full: data ## Efficient attention in full: every variant's speed and memory at 1K-16K (and the LSTM), the LRA of our own (days on a CPU)
	$(bench_attention_full)
	$(PYTHON) -m suite.report $(BENCH_FULL_DIR)/attention_speed $(BENCH_FULL_DIR)/attention_speed_lstm $(LRA_DIR) --name attention

pathfinder: install ## Make the Pathfinder-32 images offline (seeded generator, cached under data/image/pathfinder/; a few minutes, once)
	$(PYTHON) -m tasks.pathfinder

bench-lra: data pathfinder ## The LRA at CPU scale: 23 models x ListOps, Text, Image, Pathfinder (two seeds; the first 14 took 1 h 32-48 min a seed on 2 cores of an AMX Xeon, the 9 baselines more: results/lra_cpu/duration.md); LRA_CPU_SEEDS=0 for one; resumes; report in results/lra_cpu/
	@mkdir -p $(LRA_CPU_DIR) && { [ -f $(LRA_CPU_STARTED) ] || date +%s > $(LRA_CPU_STARTED); }
	$(LRA_CPU_SWEEP)
	$(LRA_CPU_SWEEP) $(LRA_CPU_ATTENTION)
	$(PYTHON) -m suite.report $(LRA_CPU_DIR) --name lra_cpu
	$(PYTHON) -m tasks.probes.listops_outer $(LRA_CPU_DIR)/listops-* --out results/lra_cpu/listops_outer.md
	@s=$$(( $$(date +%s) - $$(cat $(LRA_CPU_STARTED)) )); echo "$(LRA_CPU_COMMAND): $$s s since its first start (after set-up)"; \
	  $(PYTHON) -m suite.report.duration "$(LRA_CPU_COMMAND)" $$s results/lra_cpu

bench-capabilities: install ## The capability map (docs/capabilities.md): every model at two sizes on the twelve diagnostics, a learning-rate grid then three seeds, two jobs at a time; resumes. Not yet run end to end (its duration is unmeasured); CAPABILITY_ARGS narrows it (--models lstm --tasks parity)
	$(PYTHON) -m tasks.capabilities.map $(CAPABILITY_ARGS)

patterns: install ## Draw each attention variant's key pattern (probed from the code) into results/attention_patterns/
	$(PYTHON) -m suite.report.attention_patterns --out results/attention_patterns

report: install ## Rebuild results/<NAME>/ from run directories: make report RUNS=runs/bench-quick NAME=quick
	$(PYTHON) -m suite.report $(RUNS) --name $(NAME)

perf: install ## Our encoder against torch.nn.TransformerEncoder: training-step and inference time, as ratios, in fp32 and in the precision `auto` picks
	$(PYTHON) -m suite.tools.perf

# The measuring tools' tables, as docs/measurement.md includes them: each tool's markdown output (its
# first line names the machine, threads, torch and commit) kept under results/$(FIGURES)/. Written
# to a .part file first, so a tool that fails leaves the last good table in place.
FIGURES ?= tools
define figure
	@echo "python -m suite.tools.$(1) $(2) > results/$(FIGURES)/$(1).md"
	$(PAR) $(PYTHON) -m suite.tools.$(1) $(2) > results/$(FIGURES)/$(1).md.part
	@mv results/$(FIGURES)/$(1).md.part results/$(FIGURES)/$(1).md
endef
figures: install ## Run the measuring tools into results/$(FIGURES)/ (the tables the docs include): make figures FIGURES=tools_epyc_avx2
	mkdir -p results/$(FIGURES)
	$(call figure,precision_check,)
	$(call figure,dropout_bench,)
	$(call figure,op_profile,experiment=mfu_standard --batch 8)
	$(call figure,step_options,experiment=mfu_standard --batch 8 --repeats 30)
	$(call figure,rnn_padding,)
	$(call figure,rnn_overhead,)
	$(call figure,perf,--batch 8)

precision-check: install ## fp32 against bf16 autocast for every model family, side by side, one thread: does precision=auto pick the faster here?
	$(PAR) $(PYTHON) -m suite.tools.precision_check

clean: ## Remove run outputs (outputs/, multirun/, runs/); keeps results/ and .venv
	rm -rf outputs multirun runs
