//! Stored times (epoch seconds) as people read them.

/// `2026-11-30T03:10:00.250Z` (milliseconds only when there are some).
pub fn utc(epoch: f64) -> String {
    let millis = (epoch * 1000.0).round() as i64;
    match chrono::DateTime::from_timestamp_millis(millis) {
        Some(t) if millis % 1000 == 0 => t.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        Some(t) => t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        None => format!("{epoch}"),
    }
}

/// `1h 2m 3s`, `4.5s`, `250ms`.
pub fn span(seconds: f64) -> String {
    let s = seconds.abs();
    let text = if s < 1.0 {
        format!("{}ms", (s * 1000.0).round() as u64)
    } else if s < 60.0 {
        let t = format!("{s:.1}");
        format!("{}s", t.trim_end_matches(".0"))
    } else {
        let total = s.round() as u64;
        let (h, m, sec) = (total / 3600, total % 3600 / 60, total % 60);
        let mut parts = Vec::new();
        if h > 0 {
            parts.push(format!("{h}h"));
        }
        if m > 0 {
            parts.push(format!("{m}m"));
        }
        if sec > 0 {
            parts.push(format!("{sec}s"));
        }
        parts.join(" ")
    };
    if seconds < 0.0 {
        format!("-{text}")
    } else {
        text
    }
}

/// Now, in epoch seconds.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_spans() {
        assert_eq!(utc(1_700_000_000.0), "2023-11-14T22:13:20Z");
        assert_eq!(utc(1_700_000_000.25), "2023-11-14T22:13:20.250Z");
        assert_eq!(span(0.25), "250ms");
        assert_eq!(span(4.0), "4s");
        assert_eq!(span(4.56), "4.6s");
        assert_eq!(span(3723.0), "1h 2m 3s");
        assert_eq!(span(-90.0), "-1m 30s");
    }
}
