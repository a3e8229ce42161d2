//! `x-ms-documentdb-query-metrics` as the SDKs parse it: every field of the service, counts and
//! sizes exact for a known data set, times measured (parseable, with the total covering the
//! parts), and nothing unless the client asks.

use super::*;

/// The metrics header as `name → value`, every value a number.
fn parse_metrics(text: &str) -> Vec<(String, f64)> {
    text.split(';')
        .map(|pair| {
            let (name, value) = pair.split_once('=').expect("name=value");
            let value = value.parse::<f64>().unwrap_or_else(|_| panic!("{pair}"));
            (name.to_string(), value)
        })
        .collect()
}

#[tokio::test]
async fn query_metrics_are_measured_when_asked_for() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let mut stored_bytes = 0;
    for n in 1..=4 {
        let item = json!({"id": format!("i{n}"), "pk": "p", "n": n});
        stored_bytes += item.to_string().len();
        let created = server.create_item(item).await;
        assert_eq!(created.status, StatusCode::CREATED);
    }
    let text = "SELECT c.id FROM c WHERE c.n >= 3";
    let plain = server.query(text, &[]).await;
    assert_eq!(plain.status, StatusCode::OK, "{}", plain.body);
    assert!(plain.headers.get("x-ms-documentdb-query-metrics").is_none());
    let asked = server
        .query(text, &[("x-ms-documentdb-populatequerymetrics", "True")])
        .await;
    assert_eq!(asked.status, StatusCode::OK, "{}", asked.body);
    let metrics = parse_metrics(asked.header("x-ms-documentdb-query-metrics"));
    let names: Vec<&str> = metrics.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "totalExecutionTimeInMs",
            "queryCompileTimeInMs",
            "queryLogicalPlanBuildTimeInMs",
            "queryPhysicalPlanBuildTimeInMs",
            "queryOptimizationTimeInMs",
            "VMExecutionTimeInMs",
            "indexLookupTimeInMs",
            "documentLoadTimeInMs",
            "systemFunctionExecuteTimeInMs",
            "userFunctionExecuteTimeInMs",
            "retrievedDocumentCount",
            "retrievedDocumentSize",
            "outputDocumentCount",
            "outputDocumentSize",
            "writeOutputTimeInMs",
            "indexUtilizationRatio",
        ]
    );
    let value = |wanted: &str| {
        metrics
            .iter()
            .find(|(name, _)| name == wanted)
            .map_or(f64::NAN, |(_, value)| *value)
    };
    assert_eq!(value("retrievedDocumentCount"), 4.0);
    assert_eq!(value("retrievedDocumentSize"), stored_bytes as f64);
    assert_eq!(value("outputDocumentCount"), 2.0);
    let output_bytes = r#"{"id":"i3"}{"id":"i4"}"#.len();
    assert_eq!(value("outputDocumentSize"), output_bytes as f64);
    assert_eq!(value("indexUtilizationRatio"), 0.5);
    let times = metrics
        .iter()
        .filter(|(name, _)| name.ends_with("TimeInMs"))
        .map(|(_, value)| *value);
    assert!(times.clone().all(|time| time >= 0.0), "{metrics:?}");
    let parts = [
        "queryCompileTimeInMs",
        "indexLookupTimeInMs",
        "VMExecutionTimeInMs",
        "documentLoadTimeInMs",
        "writeOutputTimeInMs",
    ];
    let sum: f64 = parts.iter().map(|name| value(name)).sum();
    // Each time is rounded to hundredths on its own, so the sum may pass the total by that much.
    let rounding = 0.005 * (parts.len() + 1) as f64;
    assert!(
        value("totalExecutionTimeInMs") + rounding >= sum,
        "{metrics:?}"
    );
}
