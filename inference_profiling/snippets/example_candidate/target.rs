//! Snippet `example-candidate`: a copy of
//! `profiling_examples::postprocess::postprocess_detections`
//! (examples/src/postprocess.rs:74-94), made by `profile-cli new` with an NVTX
//! range around it. Its calls into `profiling_examples::postprocess` run the
//! production code. README.md says where it came from and what is left to do.

use ndarray::ArrayView2;
use profiling_core::prelude::*;
use profiling_examples::postprocess::{
    decode_predictions, keep_top_candidates, non_max_suppression, scale_boxes, Detection,
    PostprocessParams, MAX_NMS_CANDIDATES,
};
use profiling_examples::preprocess::LetterboxInfo;
use profiling_examples::synthetic::{self, SyntheticPredictions};
use profiling_examples::targets::DetectionOutput;

/// Copy of `profiling_examples::postprocess::postprocess_detections`
/// (examples/src/postprocess.rs:74-94).
#[nvtx_range]
pub fn postprocess_detections(
    raw: ArrayView2<f32>,
    letterbox: &LetterboxInfo,
    params: &PostprocessParams,
) -> Vec<Detection> {
    // Best class per anchor, kept when it clears the confidence threshold.
    let mut detections = {
        let _range = profiling_range("decode");
        decode_predictions(raw, params.conf_threshold)
    };
    // Nothing is confident enough: skip suppression and rescaling.
    if detections.is_empty() {
        return detections;
    }
    // Bound the work NMS can be handed, keeping the best-scored candidates.
    {
        let _range = profiling_range("keep top candidates");
        keep_top_candidates(&mut detections, MAX_NMS_CANDIDATES);
    }
    // Per class, drop boxes that overlap a better one; at most max_detections stay.
    let mut detections = {
        let _range = profiling_range("nms");
        non_max_suppression(detections, params.iou_threshold, params.max_detections)
    };
    // From letterboxed input pixels back to the original image, clipped to it.
    {
        let _range = profiling_range("scale boxes");
        scale_boxes(&mut detections, letterbox);
    }
    detections
}

/// The arguments of one call to `postprocess_detections`, made from a record by `prepare`.
pub struct ExampleCandidateInputs {
    /// `raw: ArrayView2<f32>`: a synthetic `[8400, 84]` raw output for the record.
    pub raw: ndarray::Array2<f32>,
    /// `letterbox: &LetterboxInfo`: the record's image letterboxed into 640x640.
    pub letterbox: LetterboxInfo,
    /// `params: &PostprocessParams`: `PostprocessParams::default()`.
    pub params: PostprocessParams,
}

/// Profiles a copy of `postprocess_detections` (examples/src/postprocess.rs:74-94).
#[derive(Default)]
pub struct ExampleCandidate;

#[profile_target(name = "example-candidate")]
impl ProfileTarget for ExampleCandidate {
    type Prepared = ExampleCandidateInputs;
    type Output = DetectionOutput;

    // Once per record, outside every range (inside the passes with
    // target.profile_prepare: true).
    fn prepare(
        &mut self,
        record: &DataRecord,
        _device: Device,
    ) -> anyhow::Result<ExampleCandidateInputs> {
        // The same raw output `detection-postprocess` profiles: seeded by the
        // run's seed and the record id.
        let SyntheticPredictions { raw, letterbox } = synthetic::predictions_for_record(record)?;
        let params: PostprocessParams = Default::default();
        Ok(ExampleCandidateInputs {
            raw,
            letterbox,
            params,
        })
    }

    // Measured: runs in every warmup and measured pass.
    fn run(&mut self, inputs: &ExampleCandidateInputs) -> anyhow::Result<DetectionOutput> {
        Ok(DetectionOutput {
            detections: postprocess_detections(
                inputs.raw.view(),
                &inputs.letterbox,
                &inputs.params,
            ),
            image_size: inputs.letterbox.original,
        })
    }

    // Warmup outputs only, never inside the capture range: check here what
    // production promises (shapes, ranges, ordering).
    fn validate(&self, output: &DetectionOutput) -> anyhow::Result<()> {
        output.check(PostprocessParams::default().max_detections)
    }

    // Outputs of the last measured pass, into the manifest: a few values that
    // say what came out.
    fn summarize(&self, output: &DetectionOutput) -> Summary {
        output.summary()
    }
}

/// The copy against production: for each record of `config.yaml`, `prepare`
/// makes the inputs once, then the copy and
/// `profiling_examples::postprocess::postprocess_detections` run on them, and
/// their outputs must be equal: `==` when the output type is `PartialEq`, else
/// the target's `summarize` of each. `profile-cli check example-candidate` runs
/// it.
#[cfg(test)]
mod parity {
    use super::*;

    #[test]
    fn the_copy_computes_what_production_computes() {
        let config = profiling_core::parity::config_beside(file!(), env!("CARGO_MANIFEST_DIR"));
        profiling_core::parity::each_record(&config, |record, device| {
            let mut target = ExampleCandidate;
            let inputs = target.prepare(record, device)?;
            let copy = postprocess_detections(inputs.raw.view(), &inputs.letterbox, &inputs.params);
            let production = profiling_examples::postprocess::postprocess_detections(
                inputs.raw.view(),
                &inputs.letterbox,
                &inputs.params,
            );
            Ok(profiling_core::same_output!(copy, production, |output| {
                target.summarize(output)
            }))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;
    use profiling_core::data::dummy::DummySource;
    use profiling_core::data::RecordSource;
    use profiling_examples::postprocess;
    use rand::SeedableRng;

    /// Letterboxed 100x100 from 200x100: scale 0.5, 25 px of padding on top.
    fn letterbox() -> LetterboxInfo {
        LetterboxInfo::fit((200, 100), 100)
    }

    #[test]
    fn copy_matches_production_on_a_tiny_fixture() {
        let raw = array![
            [50.0, 50.0, 20.0, 20.0, 0.9, 0.0],
            [51.0, 50.0, 20.0, 20.0, 0.8, 0.0],
            [51.0, 50.0, 20.0, 20.0, 0.0, 0.7],
            [10.0, 30.0, 4.0, 4.0, 0.3, 0.0],
            [80.0, 60.0, 8.0, 8.0, 0.2, 0.1],
        ];
        let params = PostprocessParams::default();
        let copied = postprocess_detections(raw.view(), &letterbox(), &params);
        let production = postprocess::postprocess_detections(raw.view(), &letterbox(), &params);
        assert_eq!(copied, production);
        assert_eq!(copied.len(), 3);
    }

    #[test]
    fn copy_keeps_the_early_return() {
        let raw = array![[50.0, 50.0, 20.0, 20.0, 0.1, 0.2]];
        let params = PostprocessParams::default();
        assert!(postprocess_detections(raw.view(), &letterbox(), &params).is_empty());
        assert!(postprocess::postprocess_detections(raw.view(), &letterbox(), &params).is_empty());
    }

    #[test]
    fn copy_matches_production_on_the_synthetic_output() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let info = LetterboxInfo::fit((64, 48), synthetic::INPUT_SIZE);
        let raw = synthetic::raw_predictions(
            &mut rng,
            &info,
            synthetic::NUM_ANCHORS,
            synthetic::NUM_CLASSES,
        );
        let params = PostprocessParams {
            max_detections: 5,
            ..PostprocessParams::default()
        };
        let copied = postprocess_detections(raw.view(), &info, &params);
        assert_eq!(
            copied,
            postprocess::postprocess_detections(raw.view(), &info, &params)
        );
        assert_eq!(copied.len(), 5);
    }

    #[test]
    fn target_runs_on_the_dummy_record() {
        let record = DummySource::default().read(0).unwrap();
        let mut target = ExampleCandidate;
        let prepared = target.prepare(&record, Device::Cpu).unwrap();
        let output = target.run(&prepared).unwrap();
        target.validate(&output).unwrap();
        assert_eq!(output.image_size, (64, 64));
        assert!(!output.detections.is_empty());
        let summary = target.summarize(&output);
        assert_eq!(
            summary["detections"].as_u64(),
            Some(output.detections.len() as u64)
        );
        let top_score = summary["top_score"].as_f64().unwrap() as f32;
        assert_eq!(top_score, output.detections[0].score);
    }
}
